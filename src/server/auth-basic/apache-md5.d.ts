// apache-md5 ships `export default` typings for a CommonJS `module.exports = fn`, which
// NodeNext resolution reads as a module whose default is not callable. This is what node
// hands an ES module importing it.
declare module 'apache-md5' {
  /** `$apr1$` (or `$1$` when `salt` starts so) crypt of `password`, with the salt taken from
   * `salt` (`$apr1$<salt>$...`) or random. `password` is hashed one byte per character. */
  function aprMd5(password: string, salt?: string): string;
  export = aprMd5;
}
