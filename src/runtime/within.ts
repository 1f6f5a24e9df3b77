/**
 * `work`'s outcome, or after `ms` the value `late()` returns (or the error it throws), whichever
 * comes first. The timer is cleared either way, so a finished wait never holds the process.
 * `work` is not cancelled: it goes on, and its outcome after the deadline is ignored.
 */
export function within<T, L = never>(work: Promise<T>, ms: number, late: () => L): Promise<T | L> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<L>((resolve, reject) => {
    timer = setTimeout(() => {
      try {
        resolve(late());
      } catch (err) {
        reject(err);
      }
    }, ms);
  });
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}
