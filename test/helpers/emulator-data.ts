/** The emulator's generated data, without a server: one account seeded and dumped. */
import { createEmulator, type Dump } from 'data-read-emulator';

/** The dump of an account of `contacts` contacts, drawn from `seed`. */
export function seededDump(seed: number, contacts: number): Dump {
  const { control } = createEmulator({ seed });
  const account = control.createAccount({ name: `Seed ${seed}` });
  control.seed(account.id, { contacts });
  return control.dump(account.id);
}
