/** What a function throws, to assert on the error's data (its fields, its kind) rather than its prose. */
export function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected an error');
}
