/**
 * A loaded organization's flat index as the main thread holds it while it serves: its shared
 * buffers and, per section, where it lies in them, instead of one typed-array view a section in
 * a record. With serving threads the main thread never queries an index; it keeps each one only
 * to post it to a thread that starts later and to wrap it on first use with SERVER_THREADS=1.
 *
 * Why: a record of ~50 views held per organization ~4.4 KB of view objects, and (a record filled
 * by computed keys) a hidden class of its own, ~1.3 KB more: ~7 KB of the main thread's heap an
 * organization, held for as long as the version serves. Packed, the views exist only while a
 * flat is posted or wrapped, and the section names are one array for every organization of one
 * layout.
 */
import type { FlatIndex } from './flat-index.js';
import { type Section, SECTION_TYPES, type SectionType, sectionType, sectionView } from './section.js';

const TYPE_NAMES = Object.keys(SECTION_TYPES) as SectionType[];
/** numbers a section takes in `places`: its buffer, its type, its byte offset, its length */
const PLACE = 4;

export interface PackedFlat extends Omit<FlatIndex, 'sections' | 'contacts'> {
  /** the section names, in the record's order: one frozen array for every flat of one layout */
  readonly names: readonly string[];
  readonly buffers: readonly SharedArrayBuffer[];
  /**
   * PLACE numbers a name: index into `buffers`, index into TYPE_NAMES, byte offset, length. 32-bit
   * words while every offset fits (~0.5 KB an organization instead of ~1.5), else float64.
   */
  readonly places: Uint32Array | Float64Array;
}

/** The layouts' name lists met so far (a few; bounded, so odd snapshots cannot grow it). */
const namesByKey = new Map<string, readonly string[]>();
const MAX_LAYOUTS = 32;

function sharedNames(names: string[]): readonly string[] {
  const key = names.join('\n');
  const known = namesByKey.get(key);
  if (known !== undefined) return known;
  const frozen = Object.freeze(names);
  if (namesByKey.size < MAX_LAYOUTS) namesByKey.set(key, frozen);
  return frozen;
}

/**
 * `packed` with this thread's one array of its section names: a posted flat arrives with a copy
 * of them (a structured clone shares no array), ~2 KB an organization and serving thread.
 */
export function adoptPacked(packed: PackedFlat): PackedFlat {
  const names = sharedNames(packed.names as string[]);
  return names === packed.names ? packed : packedFlat(packed, names, packed.buffers, packed.places);
}

/**
 * Every PackedFlat is made by this one literal, fields named in one order, so all share one
 * hidden class: made by spreading the flat's scalars, each had a map and descriptors of its own
 * (2,000 maps for 2,000 organizations, ~0.4 KB each, in a heap snapshot).
 */
function packedFlat(
  s: Omit<FlatIndex, 'sections' | 'contacts'>,
  names: readonly string[],
  buffers: readonly SharedArrayBuffer[],
  places: Uint32Array | Float64Array,
): PackedFlat {
  return {
    organizationId: s.organizationId,
    messageCount: s.messageCount,
    contactCount: s.contactCount,
    pairMinFrequency: s.pairMinFrequency,
    digest: s.digest,
    names,
    buffers,
    places,
  };
}

/** Words of a PackedFlat's `places` for `sections` sections. */
export function placesLength(sections: number): number {
  return sections * PLACE;
}

/**
 * `flat` packed, or null when a section is not in shared memory (a flat built on this thread).
 * `into`, of placesLength words (a view into the organization's own shared block), takes the
 * places when they fit 32 bits: the main thread and every serving thread then hold a view of them
 * there, ~0.1 KB, instead of a buffer of their own each (~1 KB an organization with its records).
 */
export function packFlat(flat: FlatIndex, into?: Uint32Array): PackedFlat | null {
  const names = Object.keys(flat.sections);
  let places: Uint32Array | Float64Array = new Float64Array(names.length * PLACE);
  const buffers: SharedArrayBuffer[] = [];
  for (let i = 0; i < names.length; i++) {
    const a = flat.sections[names[i]];
    if (!(a.buffer instanceof SharedArrayBuffer)) return null;
    let b = buffers.indexOf(a.buffer);
    if (b < 0) b = buffers.push(a.buffer) - 1;
    places[PLACE * i] = b;
    places[PLACE * i + 1] = TYPE_NAMES.indexOf(sectionType(a));
    places[PLACE * i + 2] = a.byteOffset;
    places[PLACE * i + 3] = a.length;
  }
  if (places.every((x) => x <= 0xffffffff)) {
    if (into !== undefined && into.length === places.length) {
      into.set(places);
      places = into;
    } else places = Uint32Array.from(places);
  }
  return packedFlat(flat, sharedNames(names), buffers, places);
}

/**
 * The flat again, a new view a section over the same memory (no copy), but one view a type for
 * every empty section; no contacts (a served flat has none).
 */
export function unpackFlat(packed: PackedFlat): FlatIndex {
  const { names: _names, buffers, places, ...scalars } = packed;
  const sections: Record<string, Section> = {};
  for (let i = 0; i < packed.names.length; i++) {
    const type = TYPE_NAMES[places[PLACE * i + 1]];
    const length = places[PLACE * i + 3];
    sections[packed.names[i]] =
      length === 0 ? emptyView(type) : sectionView(type, buffers[places[PLACE * i]], places[PLACE * i + 2], length);
  }
  return { ...scalars, contacts: [], sections };
}

/**
 * This thread's one empty view of `type`. About 10 of a small organization's ~45 sections are
 * empty (no far blocks, no top lists, no pairs), and each view is ~0.1 KB that every thread
 * holding the organization's index paid anew. Shared memory like the rest, and nothing writes
 * into a section.
 */
function emptyView(type: SectionType): Section {
  let view = EMPTY.get(type);
  if (view === undefined) EMPTY.set(type, (view = sectionView(type, new SharedArrayBuffer(0), 0, 0)));
  return view;
}
const EMPTY = new Map<SectionType, Section>();
