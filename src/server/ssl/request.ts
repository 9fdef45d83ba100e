// ssl_verify_client at a request, as nginx checks it once the request's server is known
// (by its Host): the client's certificate must satisfy that server, and a client that
// negotiated one name with a server that verifies may not ask for another (421).
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { badRequestPage } from '../http/core/request.js';
import { normaliseHost } from '../http/server-names.js';
import { clientVerification, verifyRefusal, type VerifyClient } from './verify.js';

declare module '../config/model.js' {
  interface VirtualServerConfig {
    /** `ssl_verify_client` other than off (with or without a certificate of its own: the
     * request's server decides, whichever server's handshake it came through). */
    readonly sslVerify?: ServerVerify;
  }
}

/** nginx's codes of the refusals, each answered as a 400 with its own page. */
export const CERT_ERROR = 495;
export const NO_CERT = 496;
export const VERIFY_PAGES: Readonly<Record<number, string>> = {
  [CERT_ERROR]: badRequestPage('The SSL certificate error'),
  [NO_CERT]: badRequestPage('No required SSL certificate was sent'),
};

/** A server's ssl_verify_client and ssl_verify_depth (absent: off), and the files of
 * the CAs it trusts (ssl_trusted_certificate's, ssl_client_certificate's). */
export interface ServerVerify {
  readonly mode: VerifyClient;
  readonly depth: number;
  readonly trusted: readonly string[];
}

/** 0 when the request may go on, else what it is answered: 421, CERT_ERROR or NO_CERT. */
export function checkClientCertificate(req: IncomingMessage, verify: ServerVerify | undefined): number {
  const socket = req.socket as TLSSocket & { servername?: string | false };
  if (!verify || !socket.encrypted) return 0;
  const sni = socket.servername;
  const host = req.headers.host;
  if (sni && host !== undefined && normaliseHost(host) !== sni.toLowerCase()) return 421;
  const refusal = verifyRefusal(verify.mode, clientVerification(socket, verify.depth, verify.trusted));
  return refusal === 'cert-error' ? CERT_ERROR : refusal === 'no-cert' ? NO_CERT : 0;
}
