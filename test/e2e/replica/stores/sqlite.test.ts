/**
 * `replicate` into a SQLite file: the suite every store passes
 * (suite.ts) and many accounts (accounts-suite.ts), the same test code as
 * the other stores' files. A file per store, so that the stores run side
 * by side.
 */
import { docRecipe } from '../../../helpers/readme.js';
import { storeKinds } from '../../../helpers/store-kinds.js';
import { accountsSuite } from './accounts-suite.js';
import { storeSuite } from './suite.js';

const sqlite = storeKinds().find((kind) => kind.name === 'sqlite')!;
storeSuite(sqlite);
accountsSuite(sqlite, docRecipe('docs/many-accounts.md', 'many-accounts-rename-sqlite', 'sql'));
