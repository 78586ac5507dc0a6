/** Reads a V8 `.cpuprofile` (from `node --cpu-prof`) and lists where the samples landed. */
import { readFile } from 'node:fs/promises';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
}

export interface HotFunction {
  name: string;
  where: string;
  selfPercent: number;
  totalPercent: number;
}

function label(node: ProfileNode): { name: string; where: string } {
  const f = node.callFrame;
  const url = f.url.replace(/^file:\/\//, '');
  const short = url.includes('/node_modules/') ? url.slice(url.lastIndexOf('/node_modules/') + 14) : url.replace(/^.*\/(src|bench)\//, '$1/');
  return { name: f.functionName || '(anonymous)', where: url ? `${short}:${f.lineNumber + 1}` : '' };
}

/** Functions by self time (and inclusive time), excluding idle; `top` entries. */
export async function hotFunctions(path: string, top = 25): Promise<{ busyPercent: number; hot: HotFunction[] }> {
  const prof = JSON.parse(await readFile(path, 'utf8')) as CpuProfile;
  const byId = new Map(prof.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const total = prof.nodes.reduce((s, n) => s + (n.hitCount ?? 0), 0);
  const idle = prof.nodes.filter((n) => n.callFrame.functionName === '(idle)').reduce((s, n) => s + (n.hitCount ?? 0), 0);
  const busy = total - idle;
  const self = new Map<string, { name: string; where: string; self: number; total: number }>();
  for (const n of prof.nodes) {
    const hits = n.hitCount ?? 0;
    if (hits === 0 || n.callFrame.functionName === '(idle)') continue;
    const { name, where } = label(n);
    const k = `${name} ${where}`;
    const e = self.get(k) ?? { name, where, self: 0, total: 0 };
    e.self += hits;
    self.set(k, e);
    // Inclusive time: credit every distinct function on the stack once.
    const seen = new Set<string>();
    for (let id: number | undefined = n.id; id !== undefined; id = parent.get(id)) {
      const a = byId.get(id);
      if (!a) break;
      const l = label(a);
      const ak = `${l.name} ${l.where}`;
      if (seen.has(ak)) continue;
      seen.add(ak);
      const ae = self.get(ak) ?? { name: l.name, where: l.where, self: 0, total: 0 };
      ae.total += hits;
      self.set(ak, ae);
    }
  }
  const hot = [...self.values()]
    .filter((e) => e.self > 0)
    .sort((a, b) => b.self - a.self)
    .slice(0, top)
    .map((e) => ({ name: e.name, where: e.where, selfPercent: (100 * e.self) / busy, totalPercent: (100 * e.total) / busy }));
  return { busyPercent: total ? (100 * busy) / total : 0, hot };
}
