/**
 * The words the emulator makes people, companies, job titles, products and
 * ad headlines from, per country (one module each in locales/). Lists of
 * common names and plain patterns: pools.ts combines them with the seeded
 * PRNG, so a seed fixes every value and no data package is needed.
 */

export interface LocaleWords {
  /** ISO 3166 country code; also selects the phone numbering plan. */
  readonly country: string;
  /** Share of the contacts from this country (relative weight). */
  readonly weight: number;
  /** Top-level domain of company web sites. */
  readonly tld: string;
  /** Opening of a campaign link's pre-filled text. */
  readonly linkGreeting: string;
  readonly firstNames: readonly string[];
  readonly lastNames: readonly string[];
  /** Share of people with two surnames ("Silva Santos"); 1 where that is the rule. */
  readonly doubleSurname: number;
  readonly freeEmailDomains: readonly string[];
  /** Company names: `{last}`, `{last2}` (another surname), `{word}` and `{sector}` are filled in. */
  readonly companyPatterns: readonly string[];
  readonly companyWords: readonly string[];
  readonly sectors: readonly string[];
  /** Job titles: `{role}`, `{area}` and `{level}` are filled in; patterns without `{level}` are used too. */
  readonly jobPatterns: readonly string[];
  readonly roles: readonly string[];
  readonly areas: readonly string[];
  readonly levels: readonly string[];
  /** Products: `{kind}` and `{edition}`. */
  readonly productPatterns: readonly string[];
  readonly productKinds: readonly string[];
  readonly editions: readonly string[];
  /** Ad headlines: `{product}` and `{n}` (a discount in percent) are filled in. */
  readonly headlinePatterns: readonly string[];
}
