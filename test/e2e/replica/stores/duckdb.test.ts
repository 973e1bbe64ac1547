/**
 * `replicate` into a DuckDB file: the suite every store passes
 * (suite.ts) and many accounts (accounts-suite.ts), the same test code as
 * the other stores' files, a run without its optional package and one
 * on a full disk. A
 * file per store, so that the stores run side by side.
 */
import { docRecipe } from '../../../helpers/readme.js';
import { storeKinds } from '../../../helpers/store-kinds.js';
import { accountsSuite } from './accounts-suite.js';
import { duckdbFullDisk, duckdbWithoutPackage, storeSuite } from './suite.js';

const duckdb = storeKinds().find((kind) => kind.name === 'duckdb')!;
storeSuite(duckdb);
accountsSuite(duckdb, docRecipe('docs/many-accounts.md', 'many-accounts-rename-duckdb', 'sql'));
duckdbWithoutPackage();
duckdbFullDisk(duckdb);
