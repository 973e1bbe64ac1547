/**
 * Realistic values built once per seed into pools: names, companies, job
 * titles, products and ad headlines of five countries, made from the word
 * lists of locales/ with the seeded PRNG (no data package). Records then
 * combine pool entries with the PRNG, which keeps 100k contacts within a
 * second or so.
 *
 * Phones follow each country's mobile numbering plan (E.164, digits from the PRNG).
 */
import type { LocaleWords } from './locale-words.js';
import { BR } from './locales/br.js';
import { DE } from './locales/de.js';
import { GB } from './locales/gb.js';
import { MX } from './locales/mx.js';
import { US } from './locales/us.js';
import { Prng } from './prng.js';

export interface Company {
  readonly name: string;
  readonly domain: string;
}

export interface Name {
  readonly text: string;
  /** ASCII slug for e-mail addresses. */
  readonly slug: string;
}

export interface LocalePool {
  readonly country: string;
  readonly firstNames: readonly Name[];
  readonly lastNames: readonly Name[];
  readonly companies: readonly Company[];
  readonly jobTitles: readonly string[];
  readonly headlines: readonly string[];
  readonly products: readonly Name[];
  readonly freeEmailDomains: readonly string[];
  /** Opening of a campaign link's pre-filled text. */
  readonly linkGreeting: string;
  readonly phone: (prng: Prng) => string;
}

export interface Pools {
  readonly locales: readonly (readonly [LocalePool, number])[];
}

const LEGAL_WORDS = new Set([
  'ltda', 'sa', 's', 'a', 'me', 'eireli', 'inc', 'llc', 'ltd', 'plc', 'gmbh', 'co', 'kg', 'ag', 'ohg', 'and', 'e', 'y', 'und', 'group', 'grupo', 'de', 'cv', 'sc', 'sons',
]);

/** Lower-case ASCII letters and digits only. */
export function asciiSlug(text: string): string {
  return text.normalize('NFD').replace(/[\u0300-\u036f]/g, '').toLowerCase().replace(/[^a-z0-9]+/g, '');
}

function companyDomain(name: string, tld: string): string {
  const words = name.normalize('NFD').replace(/[\u0300-\u036f]/g, '').toLowerCase().split(/[^a-z0-9]+/).filter((w) => w !== '' && !LEGAL_WORDS.has(w));
  const stem = words.slice(0, 2).join('') || 'company';
  return `${stem}.${tld}`;
}

const BR_AREA = ['11', '12', '13', '15', '16', '19', '21', '24', '27', '31', '32', '34', '41', '43', '47', '48', '51', '54', '61', '62', '65', '67', '71', '73', '79', '81', '83', '84', '85', '91', '92', '98'];
const US_AREA = ['201', '212', '213', '305', '312', '404', '415', '469', '512', '617', '646', '702', '713', '718', '786', '818', '917', '929'];
const MX_AREA = ['55', '33', '81', '222', '442', '664', '998', '477'];

const phones: Readonly<Record<string, (p: Prng) => string>> = {
  BR: (p) => `+55${p.pick(BR_AREA)}9${p.between(6, 9)}${p.digits(7)}`,
  US: (p) => `+1${p.pick(US_AREA)}${p.between(2, 9)}${p.digits(2)}${p.digits(4)}`,
  MX: (p) => {
    const area = p.pick(MX_AREA);
    return `+52${area}${p.between(1, 9)}${p.digits(9 - area.length)}`;
  },
  GB: (p) => `+447${p.between(4, 9)}${p.digits(8)}`,
  DE: (p) => `+491${p.pick(['51', '52', '57', '60', '62', '70', '71', '76'])}${p.digits(7)}${p.between(0, 9)}`,
};

const LOCALES: readonly LocaleWords[] = [BR, US, MX, GB, DE];
const DISCOUNTS = ['10', '15', '20', '25', '30', '40', '50'];

function unique(make: () => string, n: number): string[] {
  const out = new Set<string>();
  for (let tries = 0; out.size < n && tries < n * 4; tries++) out.add(make());
  return [...out];
}

/** A pattern with each `{key}` replaced by a fresh value of that key. */
function fill(pattern: string, values: Readonly<Record<string, () => string>>): string {
  return pattern.replace(/\{(\w+)\}/g, (whole, key: string) => values[key]?.() ?? whole);
}

/** Two different entries of a list, joined by a space. */
function pair(p: Prng, items: readonly string[]): string {
  const first = p.pick(items);
  let second = p.pick(items);
  while (second === first && items.length > 1) second = p.pick(items);
  return `${first} ${second}`;
}

/** Surnames: single ones, and double ones in the share the country has. */
function surnames(p: Prng, words: LocaleWords): string[] {
  if (words.doubleSurname >= 1) return unique(() => pair(p, words.lastNames), 250);
  const doubles = Math.round((words.lastNames.length * words.doubleSurname) / (1 - words.doubleSurname));
  return [...words.lastNames, ...unique(() => pair(p, words.lastNames), doubles).filter((d) => !words.lastNames.includes(d))];
}

function buildLocale(words: LocaleWords, seed: number): LocalePool {
  const p = Prng.derive(seed, 'pools', words.country);
  const named = (text: string): Name => ({ text, slug: asciiSlug(text) });
  const pick = (items: readonly string[]) => (): string => p.pick(items);
  const firstNames = words.firstNames.map(named);
  const lastNames = surnames(p, words).map(named);
  const companies = unique(
    () => fill(p.pick(words.companyPatterns), { last: pick(words.lastNames), last2: pick(words.lastNames), word: pick(words.companyWords), sector: pick(words.sectors) }),
    200,
  ).map((name) => ({ name, domain: companyDomain(name, words.tld) }));
  const jobTitles = unique(() => fill(p.pick(words.jobPatterns), { role: pick(words.roles), area: pick(words.areas), level: pick(words.levels) }), 150);
  const products = unique(() => fill(p.pick(words.productPatterns), { kind: pick(words.productKinds), edition: pick(words.editions) }), 60).map(named);
  const headlines = unique(() => fill(p.pick(words.headlinePatterns), { product: () => p.pick(products).text, n: pick(DISCOUNTS) }), 120);
  const phone = phones[words.country] ?? phones.US;
  if (phone === undefined) throw new Error('no phone plan');
  return {
    country: words.country, firstNames, lastNames, companies, jobTitles, headlines, products,
    freeEmailDomains: words.freeEmailDomains, linkGreeting: words.linkGreeting, phone,
  };
}

const cache = new Map<number, Pools>();

/** The pools for a seed (built on first use, then cached for the process). */
export function getPools(seed: number): Pools {
  let pools = cache.get(seed);
  if (pools === undefined) {
    pools = { locales: LOCALES.map((words) => [buildLocale(words, seed), words.weight] as const) };
    cache.set(seed, pools);
  }
  return pools;
}
