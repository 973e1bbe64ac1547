/**
 * Opaque page cursors: base64url(JSON state) + "." + base64url(HMAC-SHA256).
 * A cursor is bound to the account and the list, and carries the read's
 * watermark, its lower time bound and the last key served (keyset paging).
 */
import { createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';
import { ProblemError } from './problem.js';

export interface CursorState {
  readonly account: string;
  readonly list: string;
  /** Watermark of the read, epoch ms. */
  readonly watermark: number;
  /** Lower bound of the read (updated_since minus the look-back), epoch ms; null: none. */
  readonly since: number | null;
  /** Key of the last record served: (cursor field ms, id). */
  readonly lastT: number;
  readonly lastId: string;
}

const VERSION = 1;

export class CursorCodec {
  private readonly secret: KeyObject;

  constructor(secret: string | Buffer) {
    this.secret = createSecretKey(typeof secret === 'string' ? Buffer.from(secret, 'utf8') : secret);
  }

  private sign(payload: string): Buffer {
    return createHmac('sha256', this.secret).update(payload).digest();
  }

  encode(state: CursorState): string {
    const payload = Buffer.from(
      JSON.stringify([VERSION, state.account, state.list, state.watermark, state.since, state.lastT, state.lastId]),
      'utf8',
    ).toString('base64url');
    return `${payload}.${this.sign(payload).toString('base64url')}`;
  }

  /** The cursor's state, or ProblemError 400 when altered, foreign or issued for another list. */
  decode(token: string, account: string, list: string): CursorState {
    const bad = (): ProblemError => new ProblemError(400, 'cursor is invalid or was altered; start the read again without cursor');
    const dot = token.indexOf('.');
    if (dot <= 0 || dot !== token.lastIndexOf('.')) throw bad();
    const payload = token.slice(0, dot);
    const given = Buffer.from(token.slice(dot + 1), 'base64url');
    const expected = this.sign(payload);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw bad();
    let parsed: unknown;
    try {
      parsed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    } catch {
      throw bad();
    }
    if (!Array.isArray(parsed) || parsed.length !== 7 || parsed[0] !== VERSION) throw bad();
    const [, acc, lst, watermark, since, lastT, lastId] = parsed as unknown[];
    if (
      typeof acc !== 'string' || typeof lst !== 'string' || typeof watermark !== 'number' ||
      !(since === null || typeof since === 'number') || typeof lastT !== 'number' || typeof lastId !== 'string'
    ) {
      throw bad();
    }
    if (acc !== account) throw new ProblemError(400, 'cursor belongs to another account');
    if (lst !== list) throw new ProblemError(400, `cursor was issued for ${lst}, not for ${list}`);
    return { account: acc, list: lst, watermark, since, lastT, lastId };
  }
}
