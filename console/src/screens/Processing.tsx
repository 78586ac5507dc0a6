import type { Session } from '../api';
export function Processing(_props: { session: Session }) {
  return <section><h2>Processing</h2></section>;
}
