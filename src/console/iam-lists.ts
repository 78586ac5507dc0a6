/**
 * Reading whole lists of IAM objects for the console's detail views (a user's groups and policies, a group's members,
 * who a policy is attached to): every page of a store list, 1,000 at a time, or 612 when the object is gone.
 */
import type { Page, PageRequest } from '../ports/iam.js';

/** Every item of a paged store list; undefined when the first page is (the object does not exist). */
export async function allPages<T>(read: (page: PageRequest) => Promise<Page<T> | undefined>): Promise<T[] | undefined> {
  const out: T[] = [];
  for (let offset = 0; ; offset += 1000) {
    const page = await read({ offset, limit: 1000 });
    if (!page) return offset === 0 ? undefined : out;
    out.push(...page.list);
    if (page.list.length < 1000) return out;
  }
}
