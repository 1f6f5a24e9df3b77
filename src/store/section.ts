/** The element types of an index's sections (flat-index.ts), and what the manifest records of each. */

export type Section =
  | Uint8Array
  | Uint16Array
  | Uint32Array
  | Int32Array
  | Float64Array
  | Float32Array
  | Int8Array
  | Int16Array
  | BigUint64Array;

/** Element types a section may have, by constructor name (what the manifest records). */
export const SECTION_TYPES = {
  Uint8Array,
  Uint16Array,
  Uint32Array,
  Int32Array,
  Float64Array,
  Float32Array,
  Int8Array,
  Int16Array,
  BigUint64Array,
} as const;
export type SectionType = keyof typeof SECTION_TYPES;

export function sectionType(a: Section): SectionType {
  const name = a.constructor.name;
  if (!Object.hasOwn(SECTION_TYPES, name)) throw new Error(`index: field of unsupported type ${name}`);
  return name as SectionType;
}

/** A view of `length` elements of `type` at `byteOffset` of `buffer` (no copy). */
export function sectionView(type: SectionType, buffer: ArrayBufferLike, byteOffset: number, length: number): Section {
  const View = SECTION_TYPES[type] as unknown as new (b: ArrayBufferLike, o: number, l: number) => Section;
  return new View(buffer, byteOffset, length);
}
