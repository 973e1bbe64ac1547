/**
 * The config keys of proxies and private CAs: proxy_url and ca_certificate
 * validated with messages that say what to give (never quoting credentials),
 * their credentials registered as secrets with those of the proxy variables,
 * and the keys in every face (SPEC, --about, TAP_DATA_READ_* variables).
 */
import { describe, expect, it } from 'vitest';
import { CaCertificateError, parseCaCertificates } from '../../src/network/ca-certificates.js';
import { configJsonSchema, parseConfig, parseUserConfig } from '../../src/config/config.js';
import { ConfigError } from '../../src/errors.js';
import { about } from '../../src/protocols/singer/about.js';
import { configFromEnv } from '../../src/protocols/singer/config-input.js';
import { makeTestCa } from '../helpers/certificates.js';

const good = { api_key: 'acme_live_s3cr3tKEY', base_url: 'https://api.example.com' };
const ca = makeTestCa();

function errorOf(input: unknown): string {
  try {
    parseConfig(input);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected a ConfigError');
}

describe('proxy_url', () => {
  it('accepts http:// and https:// proxies, with or without credentials; empty is unset', () => {
    for (const proxy_url of ['http://proxy.corp:3128', 'https://user:p%40ss@proxy.corp:8443', 'proxy.corp:3128', '', '  ']) {
      expect(() => parseConfig({ ...good, proxy_url }), proxy_url).not.toThrow();
    }
  });

  it.each([
    ['socks5://etl:Sup3rSecret@proxy:1080', /proxy_url names a SOCKS proxy/],
    ['ftp://etl:Sup3rSecret@proxy:21', /proxy_url must start with http:\/\/ or https:\/\//],
    ['http://etl:Sup3r%zzSecret@proxy:3128', /malformed %-escape/],
    ['http://etl:Sup3rSecret@', /proxy_url is not a valid proxy address/],
  ])('%s: refused without quoting it', (proxy_url, message) => {
    const text = errorOf({ ...good, proxy_url });
    expect(text).toMatch(message);
    expect(text).not.toContain('Sup3r');
  });

  it('a type error says what is expected', () => {
    expect(errorOf({ ...good, proxy_url: 3128 })).toMatch(/proxy_url must be a string: http:\/\/\[user:password@\]host:port/);
  });

  it('its credentials, and those of the proxy variables, become secrets before validation', () => {
    const secrets: string[] = [];
    const sink = { addSecret: (s: string) => secrets.push(s) };
    parseUserConfig({ ...good, proxy_url: 'http://etl:cfg-Secret-1@proxy:3128' }, sink, { HTTPS_PROXY: 'http://u:env-Secret-2@proxy:3128' });
    expect(secrets).toEqual(expect.arrayContaining([good.api_key, 'cfg-Secret-1', 'env-Secret-2']));
    const again: string[] = [];
    expect(() => parseUserConfig({ proxy_url: 'socks5://etl:bad-Secret-3@proxy:1', api_key: 1 }, { addSecret: (s) => again.push(s) }, {})).toThrow(ConfigError);
    expect(again).toContain('bad-Secret-3');
  });
});

describe('ca_certificate', () => {
  it('one certificate, a bundle of several, or one squeezed onto a line with \\n escapes', () => {
    expect(parseCaCertificates(ca.caCert)).toHaveLength(1);
    expect(parseCaCertificates(`${ca.caCert}\n${ca.otherCaCert}`)).toHaveLength(2);
    expect(parseCaCertificates(ca.caCert.replace(/\n/g, '\\n'))).toHaveLength(1);
    expect(() => parseConfig({ ...good, ca_certificate: `${ca.caCert}${ca.otherCaCert}` })).not.toThrow();
  });

  it('OpenSSL\'s TRUSTED CERTIFICATE form (openssl x509 -addtrust, ca-bundle.trust.crt): read as the certificate it holds', () => {
    // The certificate's DER followed by OpenSSL's trust settings (SEQUENCE { SEQUENCE OF { serverAuth } }).
    const der = Buffer.from(ca.caCert.replace(/-----[A-Z ]+-----/g, '').replace(/\s+/g, ''), 'base64');
    const trust = Buffer.from('300c300a06082b06010505070301', 'hex');
    const body = Buffer.concat([der, trust]).toString('base64').replace(/.{64}/g, '$&\n');
    const trusted = `-----BEGIN TRUSTED CERTIFICATE-----\n${body}\n-----END TRUSTED CERTIFICATE-----\n`;
    const [read] = parseCaCertificates(trusted);
    expect(read).toMatch(/^-----BEGIN CERTIFICATE-----\n[\s\S]+\n-----END CERTIFICATE-----$/);
    expect(() => parseConfig({ ...good, ca_certificate: `${ca.otherCaCert}${trusted}` })).not.toThrow();
  });

  it.each([
    ['not a certificate', /ca_certificate must hold one or more PEM certificates/],
    [ca.server.key, /ca_certificate holds a private key; give only the certificate/],
    [`${ca.caCert}${ca.server.key}`, /private key/],
    [ca.caCert.replace(/\n[A-Za-z0-9+/]{20}/, '\n!!!!'), /ca_certificate: its certificate cannot be read/],
    [`${ca.caCert}-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n`, /certificate 2 of 2 cannot be read/],
  ])('%#: refused with a message that says what to give', (pem, message) => {
    expect(() => parseCaCertificates(pem)).toThrow(CaCertificateError);
    const text = errorOf({ ...good, ca_certificate: pem });
    expect(text).toMatch(message);
    expect(text).not.toContain('PRIVATE KEY-----\n');
  });
});

describe('in every face', () => {
  it('the SPEC: proxy_url secret, ca_certificate multi-line', () => {
    const props = configJsonSchema().properties as Record<string, Record<string, unknown>>;
    expect(props.proxy_url).toMatchObject({ type: 'string', airbyte_secret: true });
    expect(props.ca_certificate).toMatchObject({ type: 'string', multiline: true });
    expect(props.ca_certificate?.airbyte_secret).toBeUndefined();
  });

  it('--about: proxy_url secret for Meltano, ca_certificate listed, no Airbyte keywords', () => {
    const props = about().settings.properties as Record<string, Record<string, unknown>>;
    expect(props.proxy_url).toMatchObject({ type: 'string', secret: true, writeOnly: true });
    expect(props.ca_certificate).toMatchObject({ type: 'string' });
    expect(JSON.stringify(about())).not.toMatch(/multiline|airbyte_secret/);
  });

  it('TAP_DATA_READ_PROXY_URL and TAP_DATA_READ_CA_CERTIFICATE (a multi-line value) with --config ENV', () => {
    const env = { TAP_DATA_READ_PROXY_URL: 'http://proxy.corp:3128', TAP_DATA_READ_CA_CERTIFICATE: ca.caCert };
    expect(configFromEnv(env)).toEqual({ proxy_url: 'http://proxy.corp:3128', ca_certificate: ca.caCert });
    expect(() => parseConfig({ ...good, ...configFromEnv(env) })).not.toThrow();
  });
});
