/**
 * Preloaded into a server process by test/e2e/limits.test.ts (`--import`): once the server has
 * installed its process-level handlers, throws from a timer and rejects a promise, as a stray bug
 * in any callback would. The server must log them and keep serving.
 */
const poll = setInterval(() => {
  if (process.listenerCount('uncaughtException') === 0) return;
  clearInterval(poll);
  setTimeout(() => {
    throw new Error('stray error thrown from a timer (test)');
  }, 10);
  setTimeout(() => {
    void Promise.reject(new Error('stray rejection (test)'));
  }, 20);
}, 20);
poll.unref();
