/** Percent-decodes once and joins repeated slashes; undefined when the encoding is bad. */
export function decodePath(raw) {
    try {
        return decodeURIComponent(raw).replace(/\/{2,}/g, '/');
    }
    catch {
        return undefined;
    }
}
function hasDotDot(path) {
    return path.split('/').some((s) => s === '..');
}
/** The mount a decoded URI falls in, in nginx's order: an exact location first, then
 * the first regex that matches, in order of appearance, then the longest prefix. */
export function findMount(mounts, uri) {
    for (const m of mounts)
        if (m.exact && uri === m.location)
            return { mount: m, captures: [] };
    for (const m of mounts) {
        if (!(m.location instanceof RegExp))
            continue;
        const match = m.location.exec(uri);
        if (match)
            return { mount: m, captures: match.slice(1).map((c) => c ?? '') };
    }
    let best;
    for (const m of mounts) {
        if (m.exact || typeof m.location !== 'string')
            continue;
        if (matchesPrefix(uri, m.location) && (!best || m.location.length > best.location.length))
            best = m;
    }
    return best && { mount: best, captures: [] };
}
/** `/status/` also takes `/status`: a trailing slash is optional for the API. */
function matchesPrefix(uri, prefix) {
    return uri.startsWith(prefix) || (prefix.endsWith('/') && uri === prefix.slice(0, -1));
}
/** The static part of an `api` path before its first variable: what the mount exposes. */
function subtree(api) {
    const i = api.indexOf('$');
    const fixed = i < 0 ? api : api.slice(0, i);
    return fixed.slice(0, fixed.lastIndexOf('/') + 1) || '/';
}
function substitute(api, captures, vars, uri) {
    return api.replace(/\$(\d|uri|host|arg_[A-Za-z0-9_]+|\{[A-Za-z0-9_]+\})/g, (whole, name) => {
        if (name.startsWith('{'))
            name = name.slice(1, -1);
        if (/^\d$/.test(name))
            return captures[Number(name) - 1] ?? '';
        if (name === 'uri')
            return uri;
        if (name === 'host')
            return (vars.host ?? '').replace(/:\d+$/, '');
        if (name.startsWith('arg_'))
            return vars.query.get(name.slice(4)) ?? '';
        return whole;
    });
}
/** The API element a request names, or why it names none. undefined: no mount. */
export function mapRequest(mounts, vars) {
    const uri = decodePath(vars.path);
    if (uri === undefined)
        return { error: 'BadRequest', description: `The request path "${vars.path}" is not valid percent-encoding.` };
    if (hasDotDot(uri))
        return { error: 'BadRequest', description: `The request path "${vars.path}" contains a ".." segment.` };
    const found = findMount(mounts, uri);
    if (!found)
        return undefined;
    const { mount, captures } = found;
    let path = substitute(mount.api, captures, vars, uri);
    if (typeof mount.location === 'string' && !mount.exact && !mount.api.includes('$'))
        path += uri.length >= mount.location.length ? uri.slice(mount.location.length) : '';
    path = path.replace(/\/{2,}/g, '/');
    if (!path.startsWith('/'))
        path = '/' + path;
    // Variables can carry anything the client sent: check the result again.
    if (hasDotDot(path) || !(path + '/').startsWith(subtree(mount.api)))
        return { error: 'BadRequest', description: `The request path "${vars.path}" leads outside the API subtree "${subtree(mount.api)}".` };
    return { mount, path };
}
//# sourceMappingURL=mapping.js.map