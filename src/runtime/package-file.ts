/**
 * A file of the installed package (package.json, catalog/...) by its path
 * from the package's root, two folders above this module wherever it runs
 * from: src/runtime/ in the checkout, dist/runtime/ as tsc compiles it,
 * dist/cli/ in the executables' bundle (rolldown.config.ts).
 */
export const packageFile = (path: string): URL => new URL(`../../${path}`, import.meta.url);
