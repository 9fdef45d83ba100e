// The nginx modules zonal implements, and the standard ones it does not: the one list that
// `zonal -V` prints in nginx's configure spelling and `load_module` accepts names from.
// A tool that reads `nginx -V` to decide what a server can do (nginx's own test suite
// does) learns from it what zonal can do. A module that lands flips its `implemented`.

/** The nginx whose configuration zonal follows: `-V` says so, in nginx's words. */
export const NGINX_VERSION = '1.22.1';

export interface NginxModule {
  /** As configure spells it: `http_gzip_module`, `stream`, `http-cache`. */
  readonly name: string;
  /** nginx builds it unless told `--without-...`: zonal prints `--without-` for those it
   * lacks; the others are `--with-...`, printed only when zonal has them. */
  readonly byDefault: boolean;
  readonly implemented: boolean;
  /** The file `load_module` names when the module is built as a dynamic one. */
  readonly dynamic?: string;
}

const m = (name: string, byDefault: boolean, implemented: boolean, dynamic?: string): NginxModule => ({ name, byDefault, implemented, ...(dynamic ? { dynamic } : {}) });

export const NGINX_MODULES: readonly NginxModule[] = [
  // http, built by default
  m('http_charset_module', true, false),
  m('http_gzip_module', true, true),
  m('http_ssi_module', true, false),
  m('http_userid_module', true, false),
  m('http_access_module', true, true),
  m('http_auth_basic_module', true, true),
  m('http_mirror_module', true, false),
  m('http_autoindex_module', true, false),
  m('http_geo_module', true, true),
  m('http_map_module', true, true),
  m('http_split_clients_module', true, false),
  m('http_referer_module', true, false),
  m('http_rewrite_module', true, true),
  m('http_proxy_module', true, true),
  m('http_fastcgi_module', true, false),
  m('http_uwsgi_module', true, false),
  m('http_scgi_module', true, false),
  m('http_grpc_module', true, false),
  m('http_memcached_module', true, false),
  m('http_limit_conn_module', true, true),
  m('http_limit_req_module', true, true),
  m('http_empty_gif_module', true, false),
  m('http_browser_module', true, false),
  m('http_upstream_hash_module', true, true),
  m('http_upstream_ip_hash_module', true, true),
  m('http_upstream_least_conn_module', true, true),
  m('http_upstream_random_module', true, true),
  m('http_upstream_keepalive_module', true, true),
  m('http_upstream_zone_module', true, true),
  m('http-cache', true, true),
  // http, built when asked
  m('http_ssl_module', false, true),
  m('http_v2_module', false, false),
  m('http_realip_module', false, true),
  m('http_sub_module', false, false),
  m('http_stub_status_module', false, false),
  m('http_auth_request_module', false, false),
  m('http_image_filter_module', false, false, 'ngx_http_image_filter_module.so'),
  m('http_xslt_module', false, false, 'ngx_http_xslt_filter_module.so'),
  m('http_geoip_module', false, false, 'ngx_http_geoip_module.so'),
  m('http_perl_module', false, false, 'ngx_http_perl_module.so'),
  m('mail', false, false, 'ngx_mail_module.so'),
  // stream, built when asked; its own modules by default once it is
  m('stream', false, true, 'ngx_stream_module.so'),
  m('stream_ssl_module', false, true),
  m('stream_realip_module', false, false),
  m('stream_ssl_preread_module', false, true),
  m('stream_geoip_module', false, false, 'ngx_stream_geoip_module.so'),
  m('stream_limit_conn_module', true, true),
  m('stream_access_module', true, true),
  m('stream_geo_module', true, true),
  m('stream_map_module', true, true),
  m('stream_split_clients_module', true, false),
  m('stream_return_module', true, true),
  m('stream_set_module', true, false),
  m('stream_upstream_hash_module', true, true),
  m('stream_upstream_least_conn_module', true, true),
  m('stream_upstream_random_module', true, true),
  m('stream_upstream_zone_module', true, true),
];

/** `configure arguments:` as nginx prints it, from the table. */
export function configureArguments(): string {
  return NGINX_MODULES.filter((x) => x.implemented !== x.byDefault)
    .map((x) => (x.byDefault ? `--without-${x.name}` : `--with-${x.name}`))
    .join(' ');
}

/** The module a `load_module` file names, by its file name: undefined when none. */
export function moduleOfFile(file: string): NginxModule | undefined {
  const base = file.slice(file.lastIndexOf('/') + 1);
  return NGINX_MODULES.find((x) => x.dynamic === base);
}
