// add_header values made of what a request sent, as nginx sends them: their bytes. nginx's
// $uri is the URI percent-decoded, so `/%02` puts the byte 0x02 in `add_header X-URI $uri`
// and `/%E2%82%AC` the three bytes of the euro sign (nginx's tests, http_uri.t: "control
// escaped"). node:http refuses both in a header; the answer must still carry them, and no
// worker may fail on them. A CR or LF would end the header line: such a value is left out.
// The same holds for the peer's headers proxy_cookie_path and proxy_redirect rewrite with
// variables.
import t from 'tap';
import { createServer } from 'node:http';
import { freePorts, Zonal } from '../zonal.js';
import { exchange } from '../http/raw.js';

const [port, backendPort] = await freePorts(2);

const backend = createServer((req, res) => {
  res.setHeader('Set-Cookie', 'a=b; Path=/');
  res.end('from the peer');
});
await new Promise<void>((resolve) => backend.listen(backendPort, '127.0.0.1', () => resolve()));
t.teardown(() => new Promise((r) => backend.close(r)));

const z = await Zonal.start({
  'zonal.conf': `
worker_processes 1;
http {
    server {
        listen 127.0.0.1:${port};
        location / {
            add_header X-URI "x $uri x";
            add_header X-Plain plain;
            return 204;
        }
        location /peer/ {
            add_header X-URI "x $uri x";
            proxy_pass http://127.0.0.1:${backendPort}/;
        }
        location /cookie/ {
            proxy_pass http://127.0.0.1:${backendPort}/;
            proxy_cookie_path / "$uri/";
        }
        location /missing/ {
            add_header X-URI "x $uri x" always;
            return 404;
        }
    }
}
`,
});
t.teardown(() => z.stop());

/** The head of the answer to GET `path`, bytes as latin1 characters. */
const head = async (path: string) => {
  const { text } = await exchange(port, `GET ${path} HTTP/1.0\r\nHost: localhost\r\n\r\n`);
  return text.slice(0, text.indexOf('\r\n\r\n') + 2);
};

t.test('a control character of $uri is sent as its byte', async (t) => {
  const text = await head('/%02');
  t.match(text, /^HTTP\/1\.1 204 /);
  t.match(text, /\r\nX-URI: x \/\x02 x\r\n/, 'the byte 0x02 in the value');
  t.match(text, /\r\nX-Plain: plain\r\n/, 'the other headers as ever');
  t.match(text, /\r\nContent-Length: 0\r\n/);
});

t.test('a character beyond one byte is sent as its UTF-8 bytes', async (t) => {
  const text = await head('/%E2%82%AC');
  t.match(text, /^HTTP\/1\.1 204 /);
  t.match(text, /\r\nX-URI: x \/\xe2\x82\xac x\r\n/);
});

t.test('on a proxied answer and on an error page with always', async (t) => {
  const peer = await head('/peer/%01');
  t.match(peer, /^HTTP\/1\.1 200 /);
  t.match(peer, /\r\nX-URI: x \/peer\/\x01 x\r\n/);
  const missing = await head('/missing/%1F');
  t.match(missing, /^HTTP\/1\.1 404 /);
  t.match(missing, /\r\nX-URI: x \/missing\/\x1f x\r\n/);
});

t.test("a peer's header rewritten with variables", async (t) => {
  const text = await head('/cookie/%02');
  t.match(text, /^HTTP\/1\.1 200 /);
  t.match(text, /\r\nSet-Cookie: a=b; Path=\/cookie\/\x02\/\r\n/, 'the Path proxy_cookie_path made, its byte as it is');
  const split = await head('/cookie/%0D%0AX-Injected:%20yes');
  t.match(split, /^HTTP\/1\.1 200 /);
  t.notMatch(split, /X-Injected|Set-Cookie/i, 'a value with CR LF is not sent');
});

t.test('a value with CR or LF is left out, the answer goes', async (t) => {
  const text = await head('/a%0D%0AX-Injected:%20yes');
  t.match(text, /^HTTP\/1\.1 204 /);
  t.notMatch(text, /X-Injected/i, 'no header of the request');
  t.notMatch(text, /X-URI/, 'the value is not sent');
  t.match(text, /\r\nX-Plain: plain\r\n/);
});
