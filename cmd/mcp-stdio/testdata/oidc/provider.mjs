// A real OpenID provider (the oidc-provider package) for the
// resource-server end-to-end test (oidc_e2e_test.go). It listens on
// 127.0.0.1 at a free port and prints one JSON line on stdout once ready:
// {"issuer": "...", "kid": "..."}. Every line "rotate" on stdin swaps its
// signing key for a new one (a new kid; the old key is withdrawn from the
// JWKS) and prints {"kid": "..."} again. It ends when stdin closes.
//
// Environment:
//   OIDC_PROVIDER_DIR  the installed oidc-provider package directory
//   RESOURCE           the MCP server's resource URI (the default resource)
//   CLIENT_ID, CLIENT_SECRET   a confidential client allowed client_credentials
//   RS_ID, RS_SECRET           the resource server's introspection credentials
import * as crypto from 'node:crypto';
import * as http from 'node:http';
import * as path from 'node:path';
import * as readline from 'node:readline';
import { pathToFileURL } from 'node:url';

const mod = await import(pathToFileURL(path.join(process.env.OIDC_PROVIDER_DIR, 'lib', 'index.js')).href);
const { Provider, errors } = mod;
const resource = process.env.RESOURCE;

let generation = 0;
function newKey() {
  generation += 1;
  const { privateKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwk = privateKey.export({ format: 'jwk' });
  return { ...jwk, kid: `key-${generation}-${crypto.randomBytes(4).toString('hex')}`, alg: 'ES256', use: 'sig' };
}

function newProvider(issuer, key) {
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: process.env.CLIENT_ID,
        client_secret: process.env.CLIENT_SECRET,
        grant_types: ['client_credentials'],
        redirect_uris: [],
        response_types: [],
      },
      {
        client_id: process.env.RS_ID,
        client_secret: process.env.RS_SECRET,
        grant_types: [],
        redirect_uris: [],
        response_types: [],
      },
    ],
    jwks: { keys: [key] },
    clientDefaults: { id_token_signed_response_alg: 'ES256' },
    ttl: { ClientCredentials: 3600 },
    // oidc-provider's introspection names no sub for a client credentials
    // token (RFC 7662 makes it optional); many IdPs name the client, as
    // its JWTs do: so does this one, through the token's extra claims.
    extraTokenClaims: (ctx, token) => (token.kind === 'ClientCredentials' ? { sub: token.clientId } : undefined),
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => resource,
        useGrantedResource: () => true,
        // Any https resource gets tokens with itself as the audience, so
        // that the test can show a token for another resource refused.
        getResourceServerInfo: (ctx, indicator) => {
          if (!indicator.startsWith('https://')) throw new errors.InvalidTarget();
          // ?format=opaque on the token request asks for an opaque token,
          // checked through introspection.
          const opaque = ctx.URL && ctx.URL.searchParams.get('format') === 'opaque';
          return opaque
            ? { scope: 'mcp:tools', audience: indicator, accessTokenTTL: 3600, accessTokenFormat: 'opaque' }
            : { scope: 'mcp:tools', audience: indicator, accessTokenTTL: 3600, accessTokenFormat: 'jwt', jwt: { sign: { alg: 'ES256' } } };
        },
      },
    },
  });
  provider.on('server_error', (ctx, err) => console.error('oidc-provider server_error:', err));
  return provider;
}

let handler = null;
const server = http.createServer((req, res) => handler(req, res));
server.listen(0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  let key = newKey();
  handler = newProvider(issuer, key).callback();
  console.log(JSON.stringify({ issuer, kid: key.kid }));
  const rl = readline.createInterface({ input: process.stdin });
  rl.on('line', (line) => {
    if (line.trim() === 'rotate') {
      key = newKey();
      handler = newProvider(issuer, key).callback();
      console.log(JSON.stringify({ kid: key.kid }));
    }
  });
  rl.on('close', () => { server.close(); process.exit(0); });
});
