// Basic auth with an htpasswd file: every scheme with hashes made by the libraries and by
// other tools (openssl, PHP, jBCrypt, pyca/bcrypt, glibc's crypt), the header parser, the file read again
// after a change (on a clock the test moves), and the memory of successful checks.
import t from 'tap';
import { createHash } from 'node:crypto';
import { mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import { validateHeaderValue } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import bcrypt from 'bcryptjs';
import aprMd5 from 'apache-md5';
import { BasicAuth, parseAuthorization, parseUserFile } from '../../src/server/auth-basic/runtime.js';
import { desCrypt } from '../../src/server/auth-basic/des-crypt.js';
import { shaCrypt } from '../../src/server/auth-basic/sha-crypt.js';

const dir = await mkdtemp(join(tmpdir(), 'zonal-auth-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
const sha1 = (s: string | Buffer) => createHash('sha1').update(s).digest();

/** A clock the test moves: the file is stat()ed again only once `statInterval` has passed. */
function clock() {
  let now = 0;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

const ssha = (password: string, salt: Buffer) => `{SSHA}${Buffer.concat([sha1(Buffer.concat([Buffer.from(password), salt])), salt]).toString('base64')}`;

const users = [
  '# a comment line: alice:{PLAIN}comment',
  `alice:${bcrypt.hashSync('secret', 4)}`,
  `bob:${aprMd5('secret')}`,
  `carol:{SHA}${sha1('secret').toString('base64')}`,
  'dave:{PLAIN}secret',
  `erin:${ssha('secret', Buffer.from('saltsalt'))}`,
  'frank:secret',
  'grace:$6$saltsalt$8aE3ZdTpgO2pH1bSIa0.1MXAHx3LSkPB6ujr4eGHsxR6PMhxWxvGJ6u1WR1Ch5v2SGPTiKzbEu9ekjPYAlRYH/',
  `heidi:${bcrypt.hashSync('secret', 4).replace('$2b$', '$2x$')}`,
  'ivan:',
  'judy:$2a$10$short',
  // Known vectors made elsewhere.
  'php:$2y$10$.vGA1O9wmRjrwAVXD98HNOgsNpDczlqm3Jq7KnEd1rVAGv3Fykk1a',
  'jbcrypt:$2a$06$If6bvum7DFjUnE9p2uDeDu0YHzrHM6tf.iqN8.yx.jNN1ILEf7h0i',
  'pyca:$2b$04$cVWp4XaNU8a4v1uMRum2SO026BWLIoQMD/TXg5uZV.0P.uO8m3YEm',
  'openssl:$apr1$abcdefgh$h9FWgUz3n9YxylKLlR5SQ/',
  'md5crypt:$1$abcdefgh$cHJi5PXp/ki/ktXzqlk6I1',
  'utf8:$apr1$abcdefgh$rRdIxwY5XRHT4TMtBPZn.0',
  'ldap:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=',
  // crypt(3)'s traditional DES, made by glibc's crypt through Perl's crypt().
  'des:sa3tHJ3/KuYvI',
  'desutf8:utlYWqaaG9i6.',
  'desbadsalt:!a3tHJ3/KuYvI',
  // SHA-crypt, made by glibc's crypt through Perl's crypt().
  'sha512:$6$saltsalt$TVLlQcbpFVof5W3Yz4DTP6gRstiNuHwwTt6GLc1E5n0U0aDehy0S5knV8wiOQSpT0Y77vwPZN.Pq.H91p5hVO1',
  'sha256:$5$rounds=2000$pepper$j/12p4ukPO5zVtbWbpjVLPH48BZ2UManNL22WTfQOX0',
  'sha256utf8:$5$pepper$KqVmEkjc4wKKKfmvRisO0Pf32vI5sZoL8WmsUz8lglA',
  'alice:{PLAIN}second',
  'colon:{PLAIN}before:after',
  'crlf:{PLAIN}windows\r',
  '',
].join('\n');

const file = join(dir, 'htpasswd');
await writeFile(file, users);

t.test('schemes', async (t) => {
  const auth = new BasicAuth({ realm: 'r', userFile: file });
  const rows: [user: string, password: string, expected: boolean][] = [
    ['alice', 'secret', true],
    ['alice', 'Secret', false],
    ['alice', 'second', false],
    ['bob', 'secret', true],
    ['bob', 'secreT', false],
    ['carol', 'secret', true],
    ['carol', 'secret ', false],
    ['dave', 'secret', true],
    ['dave', 'secre', false],
    ['erin', 'secret', true],
    ['erin', 'saltsalt', false],
    ['frank', 'secret', false],
    ['grace', 'secret', false],
    ['heidi', 'secret', false],
    ['ivan', '', false],
    ['judy', 'secret', false],
    ['php', 'rasmuslerdorf', true],
    ['php', 'rasmus', false],
    ['jbcrypt', 'abc', true],
    ['pyca', 'Kk4DQuMMfZL9o', true],
    ['openssl', 'secret', true],
    ['openssl', 'secret2', false],
    ['md5crypt', 'secret', true],
    ['utf8', 'pässword', true],
    ['utf8', 'password', false],
    ['ldap', 'password', true],
    ['des', 'password', true],
    ['des', 'passwordAndMore', true],
    ['des', 'passwor', false],
    ['des', 'Password', false],
    ['desutf8', 'pässword', true],
    ['desutf8', 'password', false],
    ['desbadsalt', 'password', false],
    ['sha512', 'secret', true],
    ['sha512', 'secret2', false],
    ['sha256', 'secret', true],
    ['sha256', 'Secret', false],
    ['sha256utf8', 'pässword', true],
    ['sha256utf8', 'password', false],
    ['colon', 'before', true],
    ['colon', 'before:after', false],
    ['crlf', 'windows', true],
    ['nobody', 'secret', false],
    ['Alice', 'secret', false],
    ['#', 'secret', false],
  ];
  for (const [user, password, expected] of rows) {
    t.equal(await auth.check(basic(user, password)), expected, `${user} / ${JSON.stringify(password)}: ${expected}`);
  }
});

t.test('SHA-crypt: vectors of glibc (Perl crypt()), rounds and a long salt', async (t) => {
  const vectors: [password: string, setting: string, hash: string | undefined][] = [
    ['Hello world!', '$5$saltstring', '$5$saltstring$5B8vYYiY.CVt1RlTTf8KbXBH3hsxY/GNooZaBBGWEc5'],
    ['Hello world!', '$6$saltstring', '$6$saltstring$svn8UoSVapNtMuq1ukKS4tPQd8iKwSMHWjl/O817G3uBnIFNjnQJuesI68u4OTLiBFdcbYEdFCoEOfaS35inz1'],
    ['Hello world!', '$6$rounds=1400$anotherlongsaltstring', '$6$rounds=1400$anotherlongsalts$5FGyu8c4BZDX4wJgs0Un26YOw2XibT5eTkHF1I1aP3QqStoJI9BHD2YPJYsAjEePVGUyBjdZxcNqMWlrrbIOC.'],
    ['Hello world!', '$5$rounds=10000$saltstringsaltstring', '$5$rounds=10000$saltstringsaltst$3xv.VbSHBb41AL9AvLeujZkZRBAwqFMz2.opqey6IcA'],
    ['', '$6$abc', '$6$abc$mJP3a6FyA8uCnzRtlnNypPwjnvpi5TP9qOrInzrfDmwxUQG38PkpCPdqfTb8JQfAngapMxeim4AZ..hSdRRzD.'],
    // Below the minimum of rounds: the specification clamps, glibc's libxcrypt refuses ("*0").
    ['Hello world!', '$5$rounds=10$roundstoolow', undefined],
  ];
  for (const [password, setting, hash] of vectors) t.equal(shaCrypt(Buffer.from(password), setting), hash, `${JSON.stringify(password)} with ${setting}`);
  t.equal(shaCrypt(Buffer.from('x'), '$1$abc'), undefined, 'not SHA-crypt');
});

t.test('crypt(3) DES: vectors of glibc, the salt from the first two characters', async (t) => {
  const vectors: [password: Buffer, setting: string, hash: string][] = [
    [Buffer.from('password'), 'salt', 'sa3tHJ3/KuYvI'],
    [Buffer.from(''), 'ab', 'abmF1QH4PEr.E'],
    [Buffer.from('abcdefghijk'), 'zZ', 'zZx8AiUhD/THE'],
    [Buffer.from('abcdefgh'), 'zZx8AiUhD/THE', 'zZx8AiUhD/THE'],
    [Buffer.from([0xff, 0x80, 0x74, 0x65, 0x73, 0x74]), './', './vv3VymMXqSo'],
    [Buffer.from('pw'), 'ca', 'ca2g1/1lL/uQ6'],
  ];
  for (const [password, setting, hash] of vectors) t.equal(desCrypt(password, setting), hash, `${password.toString('hex')} with ${setting}`);
  t.equal(desCrypt(Buffer.from('pw'), 'a'), undefined, 'one salt character');
  t.equal(desCrypt(Buffer.from('pw'), 'a!'), undefined, 'a salt character out of the encoding');
});

t.test('the Authorization header', async (t) => {
  const auth = new BasicAuth({ realm: 'r', userFile: file });
  const token = Buffer.from('dave:secret').toString('base64');
  const rows: [header: string | undefined, expected: boolean][] = [
    [`Basic ${token}`, true],
    [`basic ${token}`, true],
    [`BASIC   ${token}`, true],
    [`Basic ${token.replace(/=+$/, '')}`, true],
    [undefined, false],
    ['', false],
    ['Basic', false],
    ['Basic ', false],
    [`Bearer ${token}`, false],
    [`Basic${token}`, false],
    [`Basic ${token} x`, false],
    [`Basic  ${token}\t`, false],
    ['Basic !!!!', false],
    [`Basic ${token.slice(0, -2)}*=`, false],
    ['Basic ZGF2ZTpzZWNyZXQ=====', false],
    ['Basic ZGF2ZTpzZWNyZXQ=X', false],
    ['Basic ZGF2ZTpzZWNyZXQx=', false],
    [`Basic ${Buffer.from('davesecret').toString('base64')}`, false],
    [`Basic ${Buffer.from(':secret').toString('base64')}`, false],
  ];
  for (const [header, expected] of rows) t.equal(await auth.check(header), expected, JSON.stringify(header));

  t.same(parseAuthorization(basic('a', 'b:c')), { user: 'a', password: 'b:c' }, 'the password is everything after the first colon');
  t.same(parseAuthorization(basic('a', '')), { user: 'a', password: '' }, 'an empty password is a password');
  t.same(parseAuthorization(basic('a', '\uFEFFx')), { user: 'a', password: '\uFEFFx' }, 'a leading BOM is part of the password');
  t.same(parseAuthorization(basic('ü', 'ß')), { user: 'ü', password: 'ß' }, 'UTF-8');
  const latin1 = `Basic ${Buffer.from('u:p\xe4ss', 'latin1').toString('base64')}`;
  t.equal(parseAuthorization(latin1), undefined, 'bytes that are not UTF-8 are refused');
});

t.test('the user file as nginx reads it', async (t) => {
  t.same([...parseUserFile('#c:x\na:1:comment\r\nb:2\n\n:3\nnocolon\na:4\n c:5\n')], [
    ['a', '1'],
    ['b', '2'],
    [' c', '5'],
  ]);
});

t.test('a changed file is read again after the stat interval, without waiting', async (t) => {
  const changing = join(dir, 'changing');
  await writeFile(changing, 'dave:{PLAIN}secret\n');
  const time = clock();
  const auth = new BasicAuth({ realm: 'r', userFile: changing }, { now: time.now });
  t.equal(await auth.check(basic('dave', 'secret')), true);

  await writeFile(changing, 'dave:{PLAIN}changed-and-longer\n');
  t.equal(await auth.check(basic('dave', 'secret')), true, 'within the interval: the table in memory, no stat');
  time.advance(999);
  t.equal(await auth.check(basic('dave', 'changed-and-longer')), false, 'still within the interval');
  time.advance(1);
  t.equal(await auth.check(basic('dave', 'secret')), false, 'the interval passed: the new file');
  t.equal(await auth.check(basic('dave', 'changed-and-longer')), true);

  await unlink(changing);
  t.equal(await auth.check(basic('dave', 'changed-and-longer')), true, 'removed, but not stat()ed yet');
  time.advance(1000);
  t.equal(await auth.check(basic('dave', 'changed-and-longer')), false, 'a missing file lets nobody in');

  await writeFile(changing, 'dave:{PLAIN}back\n');
  time.advance(1000);
  t.equal(await auth.check(basic('dave', 'back')), true, 'and it is read again once it is back');

  const quick = new BasicAuth({ realm: 'r', userFile: changing }, { now: time.now, statInterval: 10 });
  t.equal(await quick.check(basic('dave', 'back')), true);
  await writeFile(changing, 'dave:{PLAIN}again!\n');
  time.advance(10);
  t.equal(await quick.check(basic('dave', 'again!')), true, 'a configured interval');
});

t.test('a missing or unreadable file answers false and never throws', async (t) => {
  for (const userFile of [join(dir, 'missing'), dir, '']) {
    const auth = new BasicAuth({ realm: 'r', userFile });
    t.equal(await auth.check(basic('dave', 'secret')), false, JSON.stringify(userFile));
    t.equal(await auth.check(undefined), false);
  }
});

t.test("nginx's answers: 401 without credentials, 403 for a file that does not exist, 500 for one that cannot be read", async (t) => {
  const missing = new BasicAuth({ realm: 'r', userFile: join(dir, 'missing') });
  t.equal(await missing.verdict(undefined), 401, 'no credentials: the challenge, the file not looked at');
  t.equal(await missing.verdict(basic('dave', 'secret')), 403, 'no such file');
  const directory = new BasicAuth({ realm: 'r', userFile: dir });
  t.equal(await directory.verdict(basic('dave', 'secret')), 500, 'a directory');
  const readable = new BasicAuth({ realm: 'r', userFile: file });
  t.equal(await readable.verdict(basic('dave', 'secret')), 0);
  t.equal(await readable.verdict(basic('dave', 'wrong')), 401);
});

t.test('successful bcrypt checks are remembered; failures are not', async (t) => {
  // A still clock: no stat after the first read, however long bcrypt takes here.
  const auth = new BasicAuth({ realm: 'r', userFile: file }, { now: clock().now });
  t.equal(await auth.check(basic('dave', 'secret')), true, 'the file is read');

  /** Whether the check needed a turn of the event loop: bcryptjs works in setImmediate slices. */
  const yielded = async (header: string, expected: boolean) => {
    let turned = false;
    setImmediate(() => (turned = true));
    t.equal(await auth.check(header), expected);
    return turned;
  };
  t.equal(await yielded(basic('php', 'rasmuslerdorf'), true), true, 'the first check runs bcrypt');
  t.equal(await yielded(basic('php', 'rasmuslerdorf'), true), false, 'the second is remembered');
  t.equal(await yielded(basic('php', 'wrong'), false), true, 'a wrong password runs bcrypt');
  t.equal(await yielded(basic('php', 'wrong'), false), true, 'every time');

  const together = await Promise.all([1, 2, 3].map(() => auth.check(basic('jbcrypt', 'abc'))));
  t.same(together, [true, true, true], 'the same credentials at once');
  t.equal(await yielded(basic('jbcrypt', 'abc'), true), false, 'and remembered after');
});

t.test('the challenge', async (t) => {
  const challenge = (realm: string) => new BasicAuth({ realm, userFile: file }).challenge();
  t.equal(challenge('Restricted'), 'Basic realm="Restricted"');
  t.equal(challenge('say "hi" \\ bye'), 'Basic realm="say \\"hi\\" \\\\ bye"');
  t.equal(challenge('two\r\nlines\x00'), 'Basic realm="two  lines "', 'control characters, which node refuses in headers');
  t.equal(challenge('tab\there'), 'Basic realm="tab\there"');
  const accented = challenge('réservé 管理');
  t.equal(Buffer.from(accented, 'latin1').toString('utf8'), 'Basic realm="réservé 管理"', 'sent as its UTF-8 bytes');
  for (const realm of ['say "hi"', 'two\r\nlines', 'réservé 管理']) {
    t.doesNotThrow(() => validateHeaderValue('WWW-Authenticate', challenge(realm)), `node:http accepts ${JSON.stringify(realm)}`);
  }
});
