import { useCallback, useEffect, useState } from 'react';

/** Loads data with `fn` (again when `deps` change or `reload()` is called): `{data, error, reload}`. */
export function useLoad<T>(fn: () => Promise<T>, deps: unknown[]): { data: T | undefined; error: string; reload: () => void } {
  const [data, setData] = useState<T>();
  const [error, setError] = useState('');
  const [tick, setTick] = useState(0);
  const load = useCallback(fn, deps);
  useEffect(() => {
    let live = true;
    load().then(
      (d) => {
        if (live) {
          setData(d);
          setError('');
        }
      },
      (err: unknown) => {
        if (live) setError((err as Error).message);
      },
    );
    return () => {
      live = false;
    };
  }, [load, tick]);
  return { data, error, reload: () => setTick((n) => n + 1) };
}
