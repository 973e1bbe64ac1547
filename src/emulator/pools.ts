/**
 * Realistic values from @faker-js/faker, built once per seed into pools (faker
 * is slow per call); records then combine pool entries with the seeded PRNG,
 * which keeps 100k contacts within a second or so.
 *
 * Phones: faker's "international" numbers are not valid numbering plans for
 * every locale (e.g. +5500...), so phones follow each country's mobile plan
 * (E.164, digits from the PRNG).
 */
import { Faker, base, de, en, en_GB, en_US, es, es_MX, pt_BR, type LocaleDefinition } from '@faker-js/faker';
import type { Prng } from './prng.js';

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

interface LocaleSpec {
  readonly country: string;
  readonly weight: number;
  readonly definitions: readonly LocaleDefinition[];
  readonly tld: string;
  readonly linkGreeting: string;
}

const LOCALES: readonly LocaleSpec[] = [
  { country: 'BR', weight: 40, definitions: [pt_BR, en, base], tld: 'com.br', linkGreeting: 'Olá! Quero saber mais sobre' },
  { country: 'US', weight: 25, definitions: [en_US, en, base], tld: 'com', linkGreeting: "Hi! I'd like to know more about" },
  { country: 'MX', weight: 15, definitions: [es_MX, es, en, base], tld: 'com.mx', linkGreeting: '¡Hola! Quiero saber más sobre' },
  { country: 'GB', weight: 10, definitions: [en_GB, en, base], tld: 'co.uk', linkGreeting: "Hello! I'd like to hear more about" },
  { country: 'DE', weight: 10, definitions: [de, en, base], tld: 'de', linkGreeting: 'Hallo! Ich möchte mehr erfahren über' },
];

function unique(make: () => string, n: number): string[] {
  const out = new Set<string>();
  for (let tries = 0; out.size < n && tries < n * 4; tries++) out.add(make());
  return [...out];
}

function buildLocale(spec: LocaleSpec, seed: number): LocalePool {
  const f = new Faker({ locale: [...spec.definitions], seed });
  const named = (text: string): Name => ({ text, slug: asciiSlug(text) });
  const firstNames = unique(() => f.person.firstName(), 250).map(named);
  const lastNames = unique(() => f.person.lastName(), 250).map(named);
  const companies = unique(() => f.company.name(), 200).map((name) => ({ name, domain: companyDomain(name, spec.tld) }));
  const jobTitles = unique(() => f.person.jobTitle(), 150);
  const headlines = unique(() => f.company.catchPhrase(), 120);
  const products = unique(() => f.commerce.productName(), 60).map(named);
  const free = f.definitions.internet?.free_email;
  const freeEmailDomains = Array.isArray(free) && free.length > 0 ? free.map(String) : ['gmail.com', 'outlook.com'];
  const phone = phones[spec.country] ?? phones.US;
  if (phone === undefined) throw new Error('no phone plan');
  return { country: spec.country, firstNames, lastNames, companies, jobTitles, headlines, products, freeEmailDomains, linkGreeting: spec.linkGreeting, phone };
}

const cache = new Map<number, Pools>();

/** The pools for a seed (built on first use, then cached for the process). */
export function getPools(seed: number): Pools {
  let pools = cache.get(seed);
  if (pools === undefined) {
    pools = { locales: LOCALES.map((spec, i) => [buildLocale(spec, (seed + i * 7919) >>> 0), spec.weight] as const) };
    cache.set(seed, pools);
  }
  return pools;
}
