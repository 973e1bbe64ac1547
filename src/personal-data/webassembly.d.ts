/**
 * The part of the WebAssembly JavaScript API the hash kernel uses
 * (hmac-batch.ts). Node.js has it as a global; TypeScript declares it only in
 * its DOM library, which this project does not load.
 */
declare namespace WebAssembly {
  class Module {
    constructor(bytes: Uint8Array);
  }
  class Instance {
    constructor(module: Module, imports: Record<string, never>);
    readonly exports: Exports;
  }
  class Memory {
    readonly buffer: ArrayBuffer;
  }
  class Global {
    readonly value: unknown;
  }
  type Exports = Readonly<Record<string, Memory | Global | ((...args: number[]) => unknown)>>;
}
