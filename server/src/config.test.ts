import t from 'tap'
import { loadConfig, ConfigError, ConfigSchema, SETTING_KEYWORDS, parseCorsOrigins } from './config.js'

t.test('defaults', async (t) => {
  const config = loadConfig({})
  t.match(config, {
    PORT: 3000,
    DATABASE_URL: 'data/club.db',
    ACCESS_TOKEN_TTL_SECONDS: 3600,
    API_KEY_RATE_LIMIT_MAX: 300,
    API_KEY_RATE_LIMIT_WINDOW_SECONDS: 60,
    TRUST_PROXY: 'false',
    PASSWORD_GRANT_ENABLED: true
  })
})

t.test('CORS_ORIGINS is a comma-separated list of exact origins', async (t) => {
  t.same(parseCorsOrigins(''), [])
  t.same(parseCorsOrigins(loadConfig({ CORS_ORIGINS: 'https://club.test, http://localhost:5173' }).CORS_ORIGINS), [
    'https://club.test',
    'http://localhost:5173'
  ])
})

t.test('values are converted from text', async (t) => {
  const config = loadConfig({ PORT: '8080', PASSWORD_GRANT_ENABLED: 'false', LOG_LEVEL: 'warn', TRUST_PROXY: '10.0.0.0/8,127.0.0.1' })
  t.equal(config.PORT, 8080)
  t.equal(config.PASSWORD_GRANT_ENABLED, false)
  t.equal(config.LOG_LEVEL, 'warn')
})

t.test('whole numbers and booleans are read as an operator writes them, and nothing is guessed', async (t) => {
  t.equal(loadConfig({ PORT: ' 8080 ' }).PORT, 8080)
  for (const [text, value] of [['TRUE', true], ['1', true], ['False', false], ['0', false]] as const) {
    t.equal(loadConfig({ PASSWORD_GRANT_ENABLED: text }).PASSWORD_GRANT_ENABLED, value, text)
  }
  // A fraction, a hexadecimal or a word is refused, not rounded or read as 1.
  for (const text of ['8080.5', '0x1f90', 'true', '8e3']) t.throws(() => loadConfig({ PORT: text }), new RegExp(`^PORT="${text}" is not valid: expected a whole number`), text)
  t.throws(() => loadConfig({ PASSWORD_GRANT_ENABLED: 'yes' }), /^PASSWORD_GRANT_ENABLED="yes" is not valid: expected true or false/)
})

t.test('every setting is checked: no schema uses a keyword loadConfig does not check', async (t) => {
  for (const [key, schema] of Object.entries(ConfigSchema.properties)) {
    const unchecked = Object.keys(schema).filter((keyword) => !(SETTING_KEYWORDS as readonly string[]).includes(keyword))
    t.same(unchecked, [], key)
    t.ok('enum' in schema || ['integer', 'string', 'boolean'].includes((schema as { type?: string }).type ?? ''), `${key} is a kind loadConfig converts`)
  }
})

t.test('a bad value stops with one line naming the variable', async (t) => {
  const cases: Array<[Record<string, string>, RegExp]> = [
    [{ PORT: 'eighty' }, /^PORT="eighty" is not valid: expected a whole number/],
    [{ PORT: '70000' }, /^PORT="70000" is not valid/],
    [{ LOG_LEVEL: 'loud' }, /^LOG_LEVEL="loud" is not valid: expected one of fatal, error/],
    [{ ACCESS_TOKEN_TTL_SECONDS: '-5' }, /^ACCESS_TOKEN_TTL_SECONDS="-5" is not valid/],
    [{ PASSWORD_HASH_COST: '3000' }, /^PASSWORD_HASH_COST=3000 is not valid: expected a power of two/],
    [{ TRUST_PROXY: 'yes please' }, /^TRUST_PROXY="yes please" is not valid/],
    [{ PUBLIC_BASE_URL: 'example.org' }, /^PUBLIC_BASE_URL="example.org" is not valid/],
    // A browser's Origin is compared as it is: no path, no trailing slash, lower case, no wildcard.
    [{ CORS_ORIGINS: 'https://club.test/' }, /^CORS_ORIGINS="https:\/\/club.test\/" is not valid: "https:\/\/club.test\/" is not an origin/],
    [{ CORS_ORIGINS: 'https://club.test, *' }, /^CORS_ORIGINS=.* is not valid: "\*" is not an origin/],
    [{ CORS_ORIGINS: 'https://Club.test' }, /^CORS_ORIGINS=.* is not valid/],
    [{ CORS_ORIGINS: 'https://club.test:443' }, /^CORS_ORIGINS=.* is not valid/],
    [{ CORS_ORIGINS: 'ftp://club.test' }, /^CORS_ORIGINS=.* is not valid/],
    [{ API_LICENSE_URL: 'terms.html' }, /^API_LICENSE_URL="terms.html" is not valid/],
    [{ API_CONTACT_EMAIL: 'nobody' }, /^API_CONTACT_EMAIL="nobody" is not valid/]
  ]
  for (const [env, message] of cases) {
    t.throws(() => loadConfig(env), message)
    try {
      loadConfig(env)
    } catch (err) {
      t.type(err, ConfigError)
      t.notMatch((err as Error).message, /\n/)
    }
  }
})

t.test('payment settings: test provider and EUR by default; Stripe needs its secret key, which no message shows', async (t) => {
  t.match(loadConfig({}), { PAYMENT_PROVIDER: 'test', STRIPE_SECRET_KEY: '', STRIPE_API_BASE_URL: 'https://api.stripe.com', CURRENCY: 'EUR' })
  t.match(loadConfig({ PAYMENT_PROVIDER: 'stripe', STRIPE_SECRET_KEY: 'sk_test_abc123', CURRENCY: 'JPY' }), {
    PAYMENT_PROVIDER: 'stripe',
    CURRENCY: 'JPY'
  })
  const cases: Array<[Record<string, string>, string | RegExp]> = [
    [{ PAYMENT_PROVIDER: 'paypal' }, /^PAYMENT_PROVIDER="paypal" is not valid: expected one of test, stripe$/],
    [{ PAYMENT_PROVIDER: 'stripe' }, 'STRIPE_SECRET_KEY is required with PAYMENT_PROVIDER=stripe'],
    [{ PAYMENT_PROVIDER: 'stripe', STRIPE_SECRET_KEY: 'pk_test_public123' }, /^STRIPE_SECRET_KEY is not valid: expected a Stripe secret key/],
    [{ STRIPE_API_BASE_URL: 'api.stripe.com' }, /^STRIPE_API_BASE_URL="api.stripe.com" is not valid/],
    [{ STRIPE_API_BASE_URL: 'http://127.0.0.1:1234/v1' }, /^STRIPE_API_BASE_URL="http:\/\/127.0.0.1:1234\/v1" is not valid/],
    [{ CURRENCY: 'eur' }, /^CURRENCY="eur" is not valid/],
    [{ CURRENCY: 'EUO' }, 'CURRENCY="EUO" is not valid: expected an ISO 4217 currency code, such as EUR'],
    [{ CURRENCY: 'EURO' }, /^CURRENCY="EURO" is not valid/]
  ]
  for (const [env, message] of cases) {
    const err = t.throws(() => loadConfig(env)) as Error
    t.type(err, ConfigError)
    if (typeof message === 'string') t.equal(err.message, message)
    else t.match(err.message, message)
  }
  const err = t.throws(() => loadConfig({ PAYMENT_PROVIDER: 'stripe', STRIPE_SECRET_KEY: 'pk_live_do-not-show' })) as Error
  t.notMatch(err.message, /do-not-show/, 'the key is named, not shown')
  t.ok(loadConfig({ STRIPE_API_BASE_URL: 'http://127.0.0.1:12345' }), 'a local origin with a port is accepted')
})

t.test('REDIS_URL: empty by default, a redis URL or a socket path, refused at start otherwise without showing its password', async (t) => {
  t.match(loadConfig({}), { REDIS_URL: '', REDIS_KEY_PREFIX: 'club:' })
  for (const good of ['redis://127.0.0.1:6379', 'redis://:secret@redis.internal/2', 'rediss://user:pw@cache.example.org:6380', '/run/redis/redis.sock']) {
    t.equal(loadConfig({ REDIS_URL: good }).REDIS_URL, good, good)
  }
  for (const bad of ['127.0.0.1:6379', 'http://:hunter2-secret@redis:6379', 'redis://:hunter2-secret@', 'redis://:hunter2-secret@host/db0', 'redis://host:0', 'redis://host:99999']) {
    const err = t.throws(() => loadConfig({ REDIS_URL: bad }), bad) as Error
    t.type(err, ConfigError)
    t.match(err.message, /^REDIS_URL is not valid: expected redis:\/\/\[user:password@\]host/)
    t.notMatch(err.message, /hunter2/, 'the password is not shown')
  }
  t.equal(loadConfig({ REDIS_KEY_PREFIX: 'club-north:' }).REDIS_KEY_PREFIX, 'club-north:')
  t.throws(() => loadConfig({ REDIS_KEY_PREFIX: 'two words' }), /^REDIS_KEY_PREFIX="two words" is not valid/)
})

// Scheduled jobs (issue 14).
t.test('WEBHOOK_SECRET and the job schedules are checked; the secret is never echoed', async (t) => {
  const good = `whsec_${Buffer.alloc(24, 7).toString('base64')}`
  t.equal(loadConfig({ WEBHOOK_SECRET: `${good} ${good}` }).WEBHOOK_SECRET, `${good} ${good}`, 'several while rotating')
  for (const bad of ['plain-secret-without-prefix', `whsec_${Buffer.alloc(16, 7).toString('base64')}`, 'whsec_not*base64!']) {
    let message = ''
    try {
      loadConfig({ WEBHOOK_SECRET: bad })
    } catch (err) {
      t.ok(err instanceof ConfigError)
      message = (err as Error).message
    }
    t.match(message, /whsec_ followed by the base64 of at least 24/)
    t.notOk(message.includes(bad), 'the value is not in the message')
  }
  t.throws(() => loadConfig({ JOB_SCHEDULE_SUMMARY: 'every night' }), /JOB_SCHEDULE_SUMMARY="every night" is not valid: expected a cron expression/)
  t.throws(() => loadConfig({ SCHEDULER: 'cloud' }), /SCHEDULER="cloud" is not valid: expected one of internal, external/)
  t.equal(loadConfig({}).SCHEDULER, 'internal')
})
