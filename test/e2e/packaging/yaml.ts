/**
 * metadata.yaml as data, read by a full YAML parser (the `yaml` package, a
 * dev dependency: no Python module needed). Duplicate keys are refused.
 */
import { parse } from 'yaml';

export type YamlValue = string | number | boolean | null | YamlValue[] | { [key: string]: YamlValue };

export function parseYaml(text: string): YamlValue {
  return parse(text, { uniqueKeys: true, strict: true }) as YamlValue;
}
