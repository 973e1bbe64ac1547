/** The API client: `createClient` and the interface it implements. */
export { createClient, DEFAULT_RETRY_BASE_MS, DEFAULT_RETRY_MAX_MS, type CreateClientOptions } from './client.js';
export * from './api-error.js';
export * from './types.js';
