/**
 * Deterministic synthetic CRM data (CONTRACT 9 records): multilingual conversations with Zipf word
 * frequencies, all channels and directions, two years of offset timestamps, duplicate instants.
 * `generateRecords` yields one record at a time so 1M+ messages never sit in memory together.
 */
import { CHANNELS, type Channel, type Contact, type MessageLine } from '../src/model/records.js';

export interface GenOptions {
  messages: number;
  contacts: number;
  organizations: number;
  seed: number;
  /**
   * `uuid`: message and conversation ids are UUIDs (as many CRMs export them) drawn from a stream
   * of their own, so every other field is the same as with the default short ids (`m_0_1`, `cv_0_0`)
   */
  ids?: 'short' | 'uuid';
  /**
   * `spread` (the default): times over two years, ~3% of lines sharing the previous line's instant.
   * `day`: each time moved back to its UTC day's midnight (~730 instants: ties broken by message id
   * within each day). `one`: every message at one instant (bulk-migrated data stamped with a date).
   * Every random draw is the same in the three, so only `sent_at` differs.
   */
  times?: 'spread' | 'day' | 'one';
}

export type GenRecord = { kind: 'contact'; contact: Contact } | { kind: 'message'; message: MessageLine };

/** mulberry32: small, fast, good enough for test data; the whole dataset depends only on the seed. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Rng = () => number;
const HEX = '0123456789abcdef';

/** A version-4-shaped UUID from the PRNG (lower case). */
export function uuidFrom(rng: Rng): string {
  let s = '';
  for (let i = 0; i < 32; i++) {
    let n = Math.floor(rng() * 16);
    if (i === 12) n = 4;
    if (i === 16) n = 8 | (n & 3);
    s += HEX[n];
    if (i === 7 || i === 11 || i === 15 || i === 19) s += '-';
  }
  return s;
}

const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[Math.floor(rng() * xs.length)];

// ---- vocabulary: words ranked by rough frequency; Zipf sampling over the rank ----

const WORDS = {
  pt: (
    'o a de que e do da em um para é com não uma os no se na por mais as dos como mas foi ao ele das tem à seu sua ou ser quando muito ' +
    'pedido boleto entrega preço água obrigado olá bom dia tarde noite você pagamento cartão pix nota fiscal segunda via produto troca ' +
    'devolução prazo frete endereço cancelar cancelamento status rastreio código desconto promoção cupom atendimento dúvida problema ' +
    'chegou ainda aguardando estoque tamanho cor valor parcela juros orçamento confirmação recebi comprovante reembolso garantia ' +
    'açaí pão coração informação ligação até amanhã então também já só está estão fiz queria gostaria ajuda urgente'
  ).split(' '),
  es: (
    'de la que el en y a los se del las un por con no una su para es al lo como más pero sus le ya o fue este ' +
    'pedido envío precio gracias hola buenos días tardes noches usted pago tarjeta factura producto cambio devolución plazo dirección ' +
    'cancelar estado seguimiento código descuento promoción cupón atención duda problema llegó todavía esperando existencias talla ' +
    'color valor cuota presupuesto confirmación recibí comprobante reembolso garantía mañana también quería ayuda urgente niño año señor'
  ).split(' '),
  en: (
    'the to and a of i you it is in for that my on with this be have are not we your can at order please thanks ' +
    'hello hi good morning delivery price payment card invoice product return refund shipping address cancel status tracking code ' +
    'discount coupon support question problem arrived still waiting stock size color quote confirmation received receipt warranty ' +
    'tomorrow also wanted help urgent café naïve résumé'
  ).split(' '),
};
type Lang = keyof typeof WORDS;
const LANGS: Lang[] = ['pt', 'pt', 'pt', 'es', 'en'];

// A Zipf tail of rarer words after the common ones: real exports hold tens of thousands of
// distinct words (30,000 were measured), and the term dictionary, the postings and the load time
// grow with them. Built from syllables with a fixed seed, so the vocabulary never depends on the
// data seed and the dataset stays a function of the seed alone.
const SYLLABLES: Record<Lang, string[]> = {
  pt: 'ba be bi bo ca ce ci co cu da de di do du fa fe fi fo ga go gu ja je jo la le li lo lu ma me mi mo mu na ne ni no nu pa pe pi po pu ra re ri ro ru sa se si so su ta te ti to tu va ve vi vo za ção lho nha nho que qui ções ão ões ém ás'.split(
    ' ',
  ),
  es: 'ba be bi bo ca ce ci co cu da de di do du fa fe fi fo ga go gu ja je jo la le li lo lu ma me mi mo mu na ne ni no nu ña ño pa pe pi po pu ra re ri ro ru sa se si so su ta te ti to tu va ve vi vo za ción llo lla que qui rá ís'.split(
    ' ',
  ),
  en: 'ab ac ad al am an ar as at ba be bi bo ca ce co da de di do el en er es fi fo ga ge go ha he hi ho in is it ka la le li lo ma me mi mo na ne ni no or pa pe pi po ra re ri ro sa se si so ta te ti to un ve wa we wi'.split(
    ' ',
  ),
};
const TAIL_WORDS = 12_000;

function tailWords(lang: Lang): string[] {
  const rng = mulberry32(lang === 'pt' ? 1001 : lang === 'es' ? 1002 : 1003);
  const seen = new Set(WORDS[lang]);
  const out: string[] = [];
  const syl = SYLLABLES[lang];
  while (out.length < TAIL_WORDS) {
    const n = 2 + Math.floor(rng() * 3);
    let w = '';
    for (let i = 0; i < n; i++) w += syl[Math.floor(rng() * syl.length)];
    if (!seen.has(w)) {
      seen.add(w);
      out.push(w);
    }
  }
  return out;
}
for (const lang of Object.keys(WORDS) as Lang[]) WORDS[lang].push(...tailWords(lang));

const GREETINGS: Record<Lang, string[]> = {
  pt: ['Olá!', 'Oi, tudo bem?', 'Bom dia', 'Boa tarde!!', 'Olá, preciso de ajuda'],
  es: ['¡Hola!', 'Buenos días', '¿Qué tal?', 'Hola, necesito ayuda'],
  en: ['Hi!', 'Hello there', 'Good morning', 'Hey, quick question'],
};
const REPLIES: Record<Lang, string[]> = {
  pt: [
    'Claro, vou verificar o seu pedido',
    'Obrigado pelo contato!',
    'Segue a segunda via do boleto',
    'O prazo de entrega é de 5 dias úteis',
  ],
  es: ['Claro, reviso su pedido', '¡Gracias por escribir!', 'Le envío la factura', 'El plazo de envío es de 5 días'],
  en: [
    'Sure, let me check your order',
    'Thanks for reaching out!',
    'Here is your invoice',
    'Delivery takes 5 business days',
  ],
};
const SENTENCES: Record<Lang, string[]> = {
  pt: [
    'Meu pedido {order} ainda não chegou',
    'Preciso da segunda via do boleto',
    'Qual o preço da água com gás?',
    'Pode enviar a nota fiscal para {email}?',
    'O PIX já foi feito, segue o comprovante',
    'Quero cancelar o pedido {order}',
    'A entrega atrasou de novo 😡',
    'Vocês têm no tamanho M?',
    'Recebi o produto errado, quero trocar',
    'Obrigado!! Chegou certinho 🙏',
    'Qual o código de rastreio do pedido {order}?',
    'Tem desconto no pix?',
  ],
  es: [
    'Mi pedido {order} todavía no llegó',
    '¿Cuál es el precio del envío?',
    'Necesito la factura a {email}',
    'Quiero cancelar el pedido {order}',
    '¡Muchas gracias! Llegó perfecto',
    'El producto llegó dañado, ¿qué hago?',
    '¿Tienen descuento para niños?',
    'Ya hice el pago con tarjeta',
  ],
  en: [
    'My order {order} has not arrived yet',
    'Can you send the invoice to {email}?',
    'I want to cancel order {order}',
    'What is the tracking code?',
    'Thanks!! Got it 👍🏽',
    'The product arrived broken, I need a refund',
    'Do you have it in size M?',
    'Is there a coupon for free shipping?',
  ],
};
const EMOJI = ['😀', '🙏', '👍🏽', '❤️', '📦', '🚚', '✅', '😡', '🤔', '🇧🇷'];
const FIRST = [
  'João',
  'María',
  'José',
  'Ana',
  'Luís',
  'Beatriz',
  'Çağla',
  'Zoë',
  'Renée',
  'Peter',
  'Ñuño',
  'Mônica',
  'Iñaki',
  'Chloé',
  'André',
  'Sofía',
];
const LAST = [
  'Silva',
  'Pereira',
  'García',
  'Müller',
  'Smith',
  'Gonçalves',
  'Núñez',
  'Ålund',
  'Souza',
  'Fernández',
  'Brown',
  'Araújo',
];
const SOURCES: (string | null)[] = [...CHANNELS, 'website', 'import', null];
const DOMAINS = ['gmail.com', 'hotmail.com', 'empresa.com.br', 'correo.es', 'example.org'];
const OFFSETS = [0, 0, -180, -180, -180, -300, 60, 120, 330, -240, 540, -60];

function zipfTable(n: number, s = 1.07): Float64Array {
  const cdf = new Float64Array(n);
  let sum = 0;
  for (let i = 0; i < n; i++) {
    sum += 1 / Math.pow(i + 1, s);
    cdf[i] = sum;
  }
  for (let i = 0; i < n; i++) cdf[i] /= sum;
  return cdf;
}
const ZIPF: Record<Lang, Float64Array> = {
  pt: zipfTable(WORDS.pt.length),
  es: zipfTable(WORDS.es.length),
  en: zipfTable(WORDS.en.length),
};

function zipfWord(rng: Rng, lang: Lang): string {
  const cdf = ZIPF[lang];
  const u = rng();
  let lo = 0,
    hi = cdf.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (cdf[mid] < u) lo = mid + 1;
    else hi = mid;
  }
  return WORDS[lang][lo];
}

function ascii(s: string): string {
  return s
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .replace(/[^A-Za-z]/g, '')
    .toLowerCase();
}

function orderNo(rng: Rng): string {
  return `#${100 + Math.floor(rng() * 9900)}-${String.fromCharCode(65 + Math.floor(rng() * 26))}`;
}

function email(rng: Rng): string {
  return `${pick(rng, ['cliente', 'contato', 'compras', 'joao.silva', 'maria_g'])}${Math.floor(rng() * 100)}@${pick(rng, DOMAINS)}`;
}

function content(rng: Rng, lang: Lang, inbound: boolean): string {
  const r = rng();
  if (r < 0.01) return '';
  const parts: string[] = [];
  if (rng() < 0.3) parts.push(pick(rng, inbound ? GREETINGS[lang] : REPLIES[lang]));
  if (rng() < 0.5) {
    parts.push(pick(rng, SENTENCES[lang]).replace('{order}', orderNo(rng)).replace('{email}', email(rng)));
    if (rng() < 0.6) return parts.join(' ');
  }
  const n = 2 + Math.floor(rng() * 12);
  for (let i = 0; i < n; i++) {
    let w = zipfWord(rng, lang);
    const v = rng();
    if (v < 0.05) w = w.toUpperCase();
    else if (v < 0.12 && i === 0) w = w[0].toUpperCase() + w.slice(1);
    else if (v < 0.14) w = ascii(w) || w; // typed without accents
    parts.push(w);
    const p = rng();
    if (p < 0.04) parts.push(orderNo(rng));
    else if (p < 0.08) parts.push(pick(rng, EMOJI));
    else if (p < 0.1) parts[parts.length - 1] += pick(rng, [',', '.', '!', '?', '!!', '...', ';']);
  }
  if (rng() < 0.04) parts.push(email(rng));
  if (rng() < 0.1) parts.push(pick(rng, EMOJI));
  return parts.join(' ');
}

const pad = (n: number, w = 2): string => String(n).padStart(w, '0');

/** RFC 3339 text of an instant in a given UTC offset (minutes); optional milliseconds. */
export function formatRfc3339(ms: number, offsetMin: number, withMillis: boolean): string {
  const d = new Date(ms + offsetMin * 60000);
  let s = `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}T${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
  if (withMillis) s += `.${pad(d.getUTCMilliseconds(), 3)}`;
  if (offsetMin === 0 && withMillis) return s + 'Z';
  if (offsetMin === 0) return s + (d.getUTCSeconds() % 2 === 0 ? 'Z' : '+00:00');
  const a = Math.abs(offsetMin);
  return `${s}${offsetMin < 0 ? '-' : '+'}${pad(Math.floor(a / 60))}:${pad(a % 60)}`;
}

const START = Date.UTC(2023, 6, 1);
const SPAN = 2 * 365 * 24 * 3600 * 1000;
const DAY_MS = 24 * 3600 * 1000;

function makeContact(rng: Rng, orgId: string): Contact {
  const first = pick(rng, FIRST),
    last = pick(rng, LAST);
  const cc = pick(rng, ['55', '55', '34', '1', '351', '52']);
  let phone: string | null = '+' + cc;
  for (let i = 0; i < 10; i++) phone += Math.floor(rng() * 10);
  if (rng() < 0.1) phone = null;
  return {
    id: uuidFrom(rng),
    organization_id: orgId,
    name: rng() < 0.05 ? null : rng() < 0.02 ? '' : `${first} ${last}`,
    phone,
    email: rng() < 0.4 ? null : `${ascii(first)}.${ascii(last)}${Math.floor(rng() * 100)}@${pick(rng, DOMAINS)}`,
    avatar_url: rng() < 0.7 ? null : `https://cdn.example.com/avatars/${Math.floor(rng() * 1e6)}.png`,
    source: pick(rng, SOURCES),
  };
}

/**
 * Yields every contact first (organization by organization), then every message. Messages come as
 * conversations: a contact, a channel, a language, 1-25 alternating-ish lines moving forward in time.
 */
export function* generateRecords(opts: GenOptions): Generator<GenRecord> {
  const { messages: total, organizations: orgCount, seed } = opts;
  const contactCount = Math.max(opts.contacts, orgCount);
  const rng = mulberry32(seed);
  const orgIds = Array.from({ length: orgCount }, () => uuidFrom(rng));
  // Contacts per organization: roughly even with at least one each.
  const orgContacts: Contact[][] = orgIds.map(() => []);
  for (let i = 0; i < contactCount; i++) {
    const o = i < orgCount ? i : Math.floor(rng() * orgCount);
    const c = makeContact(rng, orgIds[o]);
    orgContacts[o].push(c);
    yield { kind: 'contact', contact: c };
  }
  const idRng = opts.ids === 'uuid' ? mulberry32(seed ^ 0x5bd1e995) : null;
  const orgSeq = new Array<number>(orgCount).fill(0);
  const convSeq = new Array<number>(orgCount).fill(0);
  let emitted = 0;
  while (emitted < total) {
    const o = Math.floor(rng() * orgCount);
    const cs = orgContacts[o];
    // Skewed activity: a few contacts write much more than the rest.
    const c = cs[Math.floor(cs.length * Math.pow(rng(), 2))];
    const channel: Channel = pick(rng, CHANNELS);
    const lang = pick(rng, LANGS);
    const conv = idRng === null ? `cv_${o}_${convSeq[o]++}` : uuidFrom(idRng);
    const len = 1 + Math.floor(Math.pow(rng(), 2) * 25);
    let t = START + Math.floor(rng() * SPAN);
    let inbound = true;
    const tz = pick(rng, OFFSETS);
    for (let k = 0; k < len && emitted < total; k++) {
      // About 3% of lines share the previous line's exact instant.
      if (k > 0 && rng() >= 0.03) t += Math.floor(rng() * 6 * 3600 * 1000);
      const offset = rng() < 0.8 ? tz : pick(rng, OFFSETS);
      const at = opts.times === 'one' ? START : opts.times === 'day' ? t - (t % DAY_MS) : t;
      yield {
        kind: 'message',
        message: {
          id: idRng === null ? `m_${o}_${orgSeq[o]++}` : uuidFrom(idRng),
          organization_id: orgIds[o],
          contact_id: c.id,
          conversation_id: conv,
          channel,
          direction: inbound ? 'inbound' : 'outbound',
          content: content(rng, lang, inbound),
          sent_at: formatRfc3339(at, offset, rng() < 0.5),
        },
      };
      emitted++;
      if (rng() < 0.6) inbound = !inbound;
    }
  }
}

/** Small datasets in memory, for tests and benchmarks. */
export function generateDataset(opts: GenOptions): { contacts: Contact[]; messages: MessageLine[] } {
  const contacts: Contact[] = [];
  const messages: MessageLine[] = [];
  for (const r of generateRecords(opts)) {
    if (r.kind === 'contact') contacts.push(r.contact);
    else messages.push(r.message);
  }
  return { contacts, messages };
}
