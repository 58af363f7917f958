// A real OAuth 2.1 authorization server on loopback, for mcpactor's authorization tests.
//
//   node provider.mjs [--port N]        (or OIDC_PORT=N; 0 or nothing: any free port)
//
// It is oidc-provider (a certified OpenID provider), configured as the authorization
// server of MCP resource servers: every `resource` indicator (RFC 8707) a client asks for
// is accepted as a resource server, and gets RFC 9068 JWT access tokens (`typ: at+jwt`)
// whose `aud` is that resource, carrying the scopes asked for. Once it listens it prints
// one line of JSON on stdout and nothing else there:
//
//   {"issuer": "http://127.0.0.1:PORT", "port": PORT, "clients": {NAME: {client_id, client_secret}}}
//
// The clients (their secrets are new on every start, so no test can depend on a fixed one):
//   service      confidential, client_credentials            JWT access tokens
//   other        confidential, client_credentials            a second caller, JWTs too
//   opaque       confidential, client_credentials            opaque tokens, for introspection
//   introspector confidential, no grants                     what a resource server uses to
//                                                            call the introspection endpoint
//   public       public, authorization_code + PKCE, redirect http://127.0.0.1/callback
// and dynamic client registration (RFC 7591) is open, as MCP clients register themselves
// (a registered client is not held to the scopes it registered with: see below).
//
// Logging in and consenting need no browser: the interaction pages approve at once, as the
// account named by the authorization request's `login_hint` (default "test-user"), every
// scope asked for. Test-only endpoint:
//   POST /test/rotate[?retire=1]  a new signing key (new kid) signs every token from now on;
//                                 the old keys stay in the JWKS unless `retire` is given.
//                                 Answers {"kid": NEW, "kids": [every kid in the JWKS]}.
// The process exits when its stdin closes, so it never outlives the test run that started it.
//
// oidc-provider 9 asks for Node 22 LTS or later and warns on stderr when it runs on an
// older one; it runs as it should on Node 20, which is what the tests are run with here.

import { generateKeyPairSync, randomBytes } from 'node:crypto';
import http from 'node:http';
import { parseArgs } from 'node:util';

import Provider from 'oidc-provider';

const { values: args } = parseArgs({ options: { port: { type: 'string' } } });
const PORT = Number(args.port ?? process.env.OIDC_PORT ?? 0);

// What the resource servers of the tests may ask for; any resource gets all of them.
const SCOPES = ['mcp', 'tools:read', 'tools:admin', 'resources:read', 'prompts:read', 'tasks'];
const REDIRECT_URI = 'http://127.0.0.1/callback';
const DEFAULT_ACCOUNT = 'test-user';

const secret = () => randomBytes(24).toString('base64url');

const CLIENTS = {
  service: { client_id: 'mcp-service', client_secret: secret() },
  other: { client_id: 'mcp-other-service', client_secret: secret() },
  opaque: { client_id: 'mcp-opaque-service', client_secret: secret() },
  introspector: { client_id: 'mcp-resource-server', client_secret: secret() },
  public: { client_id: 'mcp-public-client' },
};
const OPAQUE_CLIENTS = new Set([CLIENTS.opaque.client_id]);

function clientConfigurations() {
  const machine = (client) => ({
    ...client,
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
    token_endpoint_auth_method: 'client_secret_basic',
  });
  return [
    machine(CLIENTS.service),
    machine(CLIENTS.other),
    machine(CLIENTS.opaque),
    {
      ...CLIENTS.introspector,
      grant_types: [],
      response_types: [],
      redirect_uris: [],
      token_endpoint_auth_method: 'client_secret_basic',
    },
    {
      ...CLIENTS.public,
      application_type: 'native',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      redirect_uris: [REDIRECT_URI],
      token_endpoint_auth_method: 'none',
    },
  ];
}

let keyCount = 0;
function newSigningKey() {
  keyCount += 1;
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    ...privateKey.export({ format: 'jwk' }),
    kid: `key-${keyCount}-${randomBytes(4).toString('hex')}`,
    alg: 'RS256',
    use: 'sig',
  };
}

// The signing keys, newest first; the newest signs, the others only stay published.
let keys = [newSigningKey()];

// Cookie keys outlive a rotation, so an interaction begun before it still completes.
const cookieKeys = [secret()];

// Where clients, grants, sessions, interactions and opaque tokens are kept. oidc-provider's
// own memory adapter gives every Provider instance a store of its own, and a rotation
// builds a new instance; this one store is shared by all of them, so what was registered,
// granted or begun before a rotation is still there after it.
const store = new Map(); // key -> { payload, expiresAt }
const byUid = new Map(); // session uid -> key
const byGrant = new Map(); // grant id -> Set of keys

function alive(key) {
  const entry = store.get(key);
  if (entry && entry.expiresAt !== undefined && entry.expiresAt <= Date.now()) {
    store.delete(key);
    return undefined;
  }
  return entry;
}

class SharedAdapter {
  constructor(model) {
    this.model = model;
  }

  key(id) {
    return `${this.model}:${id}`;
  }

  async upsert(id, payload, expiresIn) {
    const key = this.key(id);
    const expiresAt = typeof expiresIn === 'number' ? Date.now() + expiresIn * 1000 : undefined;
    store.set(key, { payload, expiresAt });
    if (payload.uid && this.model === 'Session') byUid.set(payload.uid, key);
    if (payload.grantId) {
      if (!byGrant.has(payload.grantId)) byGrant.set(payload.grantId, new Set());
      byGrant.get(payload.grantId).add(key);
    }
  }

  async find(id) {
    return alive(this.key(id))?.payload;
  }

  async findByUid(uid) {
    const key = byUid.get(uid);
    return key === undefined ? undefined : alive(key)?.payload;
  }

  async findByUserCode() {
    return undefined; // no device flow here
  }

  async consume(id) {
    const entry = alive(this.key(id));
    if (entry) entry.payload.consumed = Math.floor(Date.now() / 1000);
  }

  async destroy(id) {
    store.delete(this.key(id));
  }

  async revokeByGrantId(grantId) {
    for (const key of byGrant.get(grantId) ?? []) store.delete(key);
    byGrant.delete(grantId);
  }
}

function makeProvider(issuer) {
  const signingKid = keys[0].kid;
  const provider = new Provider(issuer, {
    adapter: SharedAdapter,
    clients: clientConfigurations(),
    jwks: { keys },
    scopes: ['openid', 'offline_access', ...SCOPES],
    claims: { openid: ['sub'] },
    cookies: { keys: cookieKeys },
    // OAuth 2.1: every authorization code flow uses PKCE, confidential clients included.
    pkce: { required: () => true },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      registration: { enabled: true },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        // A client that names no resource at the token endpoint gets the one it was
        // granted at the authorization endpoint (RFC 8707 §2.2).
        defaultResource: (ctx, client, oneOf) => oneOf,
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, resourceIndicator, client) => ({
          scope: SCOPES.join(' '),
          audience: resourceIndicator,
          accessTokenTTL: 10 * 60,
          ...(OPAQUE_CLIENTS.has(client.clientId)
            ? { accessTokenFormat: 'opaque' }
            : { accessTokenFormat: 'jwt', jwt: { sign: { alg: 'RS256', kid: signingKid } } }),
        }),
      },
    },
    // A client-credentials token names no account; its subject is the client (RFC 9068
    // §2.2 says so for JWTs, where oidc-provider already does it), in introspection too.
    extraTokenClaims: (ctx, token) =>
      token.kind === 'ClientCredentials' ? { sub: token.clientId } : undefined,
    findAccount: (ctx, sub) => ({ accountId: sub, claims: () => ({ sub }) }),
    interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  });
  return provider;
}

// Approve whatever the interaction asks: log in as the hinted account, then consent to
// every scope and resource requested (what the devInteractions form would do on "submit").
async function approve(provider, req, res) {
  const { prompt, params, session, grantId } = await provider.interactionDetails(req, res);
  if (prompt.name === 'login') {
    const accountId = params.login_hint || DEFAULT_ACCOUNT;
    await provider.interactionFinished(req, res, { login: { accountId } }, {
      mergeWithLastSubmission: false,
    });
    return;
  }
  if (prompt.name !== 'consent') {
    throw new Error(`no automatic answer to the ${prompt.name} prompt`);
  }
  const grant = grantId
    ? await provider.Grant.find(grantId)
    : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
  const { details } = prompt;
  if (details.missingOIDCScope) grant.addOIDCScope(details.missingOIDCScope.join(' '));
  if (details.missingOIDCClaims) grant.addOIDCClaims(details.missingOIDCClaims);
  for (const [indicator, scopes] of Object.entries(details.missingResourceScopes ?? {})) {
    grant.addResourceScope(indicator, scopes.join(' '));
  }
  const result = { consent: { grantId: await grant.save() } };
  await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: true });
}

// oidc-provider holds a client to the scopes it named when it registered; MCP clients
// register with the scopes of their first challenge and later step up to more (SEP-2350)
// with the same registration. So the registration's `scope` is dropped: a registered
// client may ask for any scope the server supports. oidc-provider reads a body that was
// already read from `req.body` (it warns once that it does).
async function dropRegisteredScope(req) {
  const chunks = [];
  let size = 0;
  for await (const chunk of req) {
    size += chunk.length;
    if (size > 56 * 1024) throw new Error('registration request too large');
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  let metadata;
  try {
    metadata = JSON.parse(text);
  } catch {
    req.body = text; // not JSON: oidc-provider answers it as it would
    return;
  }
  if (metadata && typeof metadata === 'object') delete metadata.scope;
  req.body = metadata;
}

function sendJson(res, status, body) {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

const server = http.createServer();
server.listen(PORT, '127.0.0.1', () => {
  const { port } = server.address();
  const issuer = `http://127.0.0.1:${port}`;
  let provider = makeProvider(issuer);
  let handle = provider.callback();

  server.on('request', async (req, res) => {
    const url = new URL(req.url, issuer);
    try {
      if (url.pathname === '/test/rotate' && req.method === 'POST') {
        // A provider's keystore is fixed when it is built, so rotation builds a new one
        // with the new key first; every instance shares the store and the cookie keys.
        const retired = url.searchParams.has('retire');
        keys = retired ? [newSigningKey()] : [newSigningKey(), ...keys];
        provider = makeProvider(issuer);
        handle = provider.callback();
        sendJson(res, 200, { kid: keys[0].kid, kids: keys.map((key) => key.kid) });
        return;
      }
      if (url.pathname.startsWith('/interaction/')) {
        await approve(provider, req, res);
        return;
      }
      if (url.pathname === '/reg' && req.method === 'POST') {
        await dropRegisteredScope(req);
      }
      // RFC 8414 metadata at its own well-known name too, beside OpenID discovery's.
      if (url.pathname === '/.well-known/oauth-authorization-server') {
        req.url = `/.well-known/openid-configuration${url.search}`;
      }
      handle(req, res);
    } catch (error) {
      if (!res.headersSent) sendJson(res, 500, { error: 'server_error', error_description: String(error) });
      else res.destroy();
    }
  });

  const publicClients = Object.fromEntries(Object.entries(CLIENTS).map(([name, client]) => [name, { ...client }]));
  process.stdout.write(`${JSON.stringify({ issuer, port, clients: publicClients })}\n`);
});

// The test run that started this process holds its stdin; when that closes, stop.
process.stdin.on('end', () => process.exit(0));
process.stdin.on('error', () => process.exit(0));
process.stdin.resume();
