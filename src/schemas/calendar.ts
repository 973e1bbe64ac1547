/**
 * Calendar arithmetic of the API's instants (ISO 8601, UTC), shared by the
 * connector's config validation and the emulator's query parsing.
 */

/** Days of `month` (1-12) in `year`, leap years included. */
export function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/** Epoch ms of a UTC calendar time (years below 100 included, which Date.UTC would shift to 19xx). */
export function utcMs(year: number, month: number, day: number, hour: number, minute: number, second: number, ms: number): number {
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, ms);
  return date.getTime();
}
