import { describe, expect, it } from 'vitest';
import { ConnectorError, toConnectorError, withoutQuotedValues } from '../src/errors.js';

describe('toConnectorError', () => {
  it('keeps a ConnectorError as it is', () => {
    const own = new ConnectorError('transient_error', 'The service said "wait".');
    expect(toConnectorError(own)).toBe(own);
  });

  it('says an unexpected error by its name and its message up to a quote: a library may quote the data it was given', () => {
    let parseError: unknown;
    try {
      JSON.parse('Ana Souza <ana@example.com>');
    } catch (err) {
      parseError = err;
    }
    const wrapped = toConnectorError(parseError);
    expect(wrapped.failureType).toBe('system_error');
    expect(wrapped.message).toMatch(/^Unexpected error in the connector: SyntaxError: Unexpected token .*\(the rest not shown: it may quote data\)$/);
    expect(wrapped.message).not.toMatch(/Ana|Souza|example/);
    expect(wrapped.cause).toBe(parseError);

    const driver = toConnectorError(Object.assign(new Error('invalid input syntax for type integer: "+55 11 91234-5678"'), { code: '22P02' }));
    expect(driver.message).toBe('Unexpected error in the connector: Error [22P02]: invalid input syntax for type integer: ... (the rest not shown: it may quote data)');
  });

  it('cuts before the word holding the quote, so a secret holding one is not left in part; an empty code is not shown', () => {
    const proxy = toConnectorError(Object.assign(new Error("connect to http://user:s3cr3t'q@proxy:3128 refused"), { code: '' }));
    expect(proxy.message).toBe('Unexpected error in the connector: Error: connect to ... (the rest not shown: it may quote data)');
  });

  it('says a message without quotes whole, and a thrown non-Error by its type alone', () => {
    expect(toConnectorError(new TypeError('x is not a function')).message).toBe('Unexpected error in the connector: TypeError: x is not a function');
    expect(toConnectorError('ana@example.com').message).toBe('Unexpected error in the connector: a string thrown, not an Error (its value is not shown: it may be data)');
  });
});

describe('withoutQuotedValues', () => {
  const shown = '(the value is not shown: it may be personal data)';
  it('keeps a database\'s words around the value it refused, the value (quotes in it included) left out', () => {
    expect(withoutQuotedValues("Could not convert string 'ana.o'brien@example.com' to INT64 when casting from source column email")).toBe(
      `Could not convert string ${shown} to INT64 when casting from source column email`,
    );
    expect(withoutQuotedValues('invalid input syntax for type bigint: "+55 (11) 91234-5678"')).toBe(`invalid input syntax for type bigint: ${shown}`);
    expect(withoutQuotedValues('Duplicate key "email: ana@example.com" violates unique constraint.')).toBe(`Duplicate key ${shown} violates unique constraint.`);
    // A value cut by a blank line the caller dropped: from its opening quote on.
    expect(withoutQuotedValues("Could not convert string 'Ana Souza")).toBe(`Could not convert string ${shown}`);
  });

  it('leaves out a number after "with value" and the row of a CSV line; an apostrophe of the words is no quote', () => {
    expect(withoutQuotedValues("Type INT64 with value 5511912345678 can't be cast because the value is out of range for the destination type INT32")).toBe(
      `Type INT64 with value ${shown} can't be cast because the value is out of range for the destination type INT32`,
    );
    expect(withoutQuotedValues('CSV Error on Line: 3\nOriginal Line: c1,ana@example.com,+5511912345678\nExpected Number of Columns: 2 Found: 3')).toBe(
      `CSV Error on Line: 3\nOriginal Line: ${shown}\nExpected Number of Columns: 2 Found: 3`,
    );
    expect(withoutQuotedValues('value too long for type character varying(5)')).toBe('value too long for type character varying(5)');
  });
});
