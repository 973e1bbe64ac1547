/**
 * `replicate` into a PostgreSQL schema on the tests' real server: the suite every store passes
 * (suite.ts) and many accounts (accounts-suite.ts), the same test code as
 * the other stores' files, and its server's faults. A file per store, so
 * that the stores run side by side.
 */
import { docRecipe } from '../../../helpers/readme.js';
import { storeKinds } from '../../../helpers/store-kinds.js';
import { accountsSuite } from './accounts-suite.js';
import { postgresFaults, storeSuite } from './suite.js';

const postgres = storeKinds().find((kind) => kind.name === 'postgres')!;
storeSuite(postgres);
accountsSuite(postgres, docRecipe('docs/many-accounts.md', 'many-accounts-rename-postgres', 'sql'));
postgresFaults(postgres);
