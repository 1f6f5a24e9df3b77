// prom-client's files, which prom.ts imports one by one; prom.ts gives each the type that
// prom-client's index.d.ts declares for it.
declare module 'prom-client/lib/*' {
  const exported: unknown;
  export default exported;
}
