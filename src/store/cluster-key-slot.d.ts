// cluster-key-slot (the slot function ioredis routes cluster commands with) ships no types.
declare module 'cluster-key-slot' {
  /** The Redis Cluster hash slot of a key (CRC16 of its hash tag or of all of it, mod 16384). */
  function calculateSlot(key: string | Buffer): number;
  export default calculateSlot;
}
