/** `npm run openapi`: rewrites openapi.json from the constants the server itself validates with. */
import { writeFileSync } from 'node:fs';
import { openApiDocument } from '../src/http/openapi.js';

writeFileSync('openapi.json', JSON.stringify(openApiDocument(), null, 2) + '\n');
console.log('openapi: wrote openapi.json');
