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
  /** Of a module zonal lacks: its directives (`name*`: every name that starts so), so
   * that `-t` says which module a directive it does not know belongs to. */
  readonly directives?: readonly string[];
}

const m = (name: string, byDefault: boolean, implemented: boolean, dynamic?: string, directives?: readonly string[]): NginxModule => ({
  name,
  byDefault,
  implemented,
  ...(dynamic ? { dynamic } : {}),
  ...(directives ? { directives } : {}),
});
/** A module zonal lacks, with its directives. */
const lacking = (name: string, byDefault: boolean, directives: readonly string[], dynamic?: string) => m(name, byDefault, false, dynamic, directives);

export const NGINX_MODULES: readonly NginxModule[] = [
  // http, built by default
  lacking('http_charset_module', true, ['charset', 'charset_map', 'charset_types', 'override_charset', 'source_charset']),
  m('http_gzip_module', true, true),
  lacking('http_ssi_module', true, ['ssi*']),
  lacking('http_userid_module', true, ['userid*']),
  m('http_access_module', true, true),
  m('http_auth_basic_module', true, true),
  lacking('http_mirror_module', true, ['mirror', 'mirror_request_body']),
  lacking('http_autoindex_module', true, ['autoindex*']),
  m('http_geo_module', true, true),
  m('http_map_module', true, true),
  lacking('http_split_clients_module', true, ['split_clients']),
  lacking('http_referer_module', true, ['valid_referers', 'referer_hash_bucket_size', 'referer_hash_max_size']),
  m('http_rewrite_module', true, true),
  m('http_proxy_module', true, true),
  lacking('http_fastcgi_module', true, ['fastcgi_*']),
  lacking('http_uwsgi_module', true, ['uwsgi_*']),
  lacking('http_scgi_module', true, ['scgi_*']),
  lacking('http_grpc_module', true, ['grpc_*']),
  lacking('http_memcached_module', true, ['memcached_*']),
  m('http_limit_conn_module', true, true),
  m('http_limit_req_module', true, true),
  lacking('http_empty_gif_module', true, ['empty_gif']),
  lacking('http_browser_module', true, ['ancient_browser*', 'modern_browser*']),
  m('http_upstream_hash_module', true, true),
  m('http_upstream_ip_hash_module', true, true),
  m('http_upstream_least_conn_module', true, true),
  m('http_upstream_random_module', true, true),
  m('http_upstream_keepalive_module', true, true),
  m('http_upstream_zone_module', true, true),
  m('http-cache', true, true),
  // http, built when asked
  m('http_ssl_module', false, true),
  // `http2` itself is accepted with a warning (http2/config.ts); its tunings are not.
  lacking('http_v2_module', false, ['http2_*']),
  lacking('http_v3_module', false, ['http3*', 'quic_*']),
  m('http_realip_module', false, true),
  lacking('http_sub_module', false, ['sub_filter*']),
  lacking('http_stub_status_module', false, ['stub_status']),
  lacking('http_auth_request_module', false, ['auth_request', 'auth_request_set']),
  lacking('http_dav_module', false, ['dav_methods', 'dav_access', 'create_full_put_path', 'min_delete_depth']),
  lacking('http_addition_module', false, ['add_before_body', 'add_after_body', 'addition_types']),
  lacking('http_gunzip_module', false, ['gunzip', 'gunzip_buffers']),
  lacking('http_flv_module', false, ['flv']),
  lacking('http_mp4_module', false, ['mp4*']),
  lacking('http_random_index_module', false, ['random_index']),
  lacking('http_secure_link_module', false, ['secure_link*']),
  lacking('http_slice_module', false, ['slice']),
  lacking('http_image_filter_module', false, ['image_filter*'], 'ngx_http_image_filter_module.so'),
  lacking('http_xslt_module', false, ['xslt_*', 'xml_entities'], 'ngx_http_xslt_filter_module.so'),
  lacking('http_geoip_module', false, ['geoip_*'], 'ngx_http_geoip_module.so'),
  lacking('http_perl_module', false, ['perl', 'perl_modules', 'perl_require', 'perl_set'], 'ngx_http_perl_module.so'),
  lacking('mail', false, ['mail'], 'ngx_mail_module.so'),
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

/** The module zonal lacks that a directive it does not know belongs to, if any. */
export function lackingModuleOf(directive: string): NginxModule | undefined {
  return NGINX_MODULES.find((x) => x.directives?.some((name) => (name.endsWith('*') ? directive.startsWith(name.slice(0, -1)) : directive === name)));
}

/** The module a `load_module` file names, by its file name: undefined when none. */
export function moduleOfFile(file: string): NginxModule | undefined {
  const base = file.slice(file.lastIndexOf('/') + 1);
  return NGINX_MODULES.find((x) => x.dynamic === base);
}
