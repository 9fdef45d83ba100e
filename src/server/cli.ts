// The `zonal` command: `-c <file>` runs the server, `-t -c <file>` checks a
// configuration, `-v` prints the version.
import { resolve } from 'node:path';
import { ZONAL_VERSION } from '../metrics/status.js';
import { formatConfigError, loadConfig } from './config/load.js';
import { stderrLog } from './log.js';
import { Primary } from './primary.js';

const USAGE = `usage: zonal [-t] -c <file> | -v
  -c <file>      run the server with this configuration file
  -t             check the configuration, print each error, and exit
  -v, --version  print the version`;

export async function main(argv: string[]): Promise<number> {
  let file: string | undefined;
  let test = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '-v' || a === '--version') {
      console.log(`zonal/${ZONAL_VERSION}`);
      return 0;
    } else if (a === '-h' || a === '--help') {
      console.log(USAGE);
      return 0;
    } else if (a === '-t') test = true;
    else if (a === '-c' && i + 1 < argv.length) file = resolve(argv[++i]);
    else {
      console.error(`zonal: invalid option "${a}"\n${USAGE}`);
      return 2;
    }
  }
  if (!file) {
    console.error(USAGE);
    return 2;
  }
  if (test) {
    const { errors } = loadConfig(file);
    for (const e of errors) console.error(formatConfigError(e));
    console.error(`zonal: configuration file ${file} test ${errors.length ? 'failed' : 'is successful'}`);
    return errors.length ? 1 : 0;
  }

  let primary: Primary;
  try {
    primary = await Primary.start(file);
  } catch (e) {
    stderrLog('emerg', (e as Error).message.replace(/^zonal: \[emerg\] /gm, ''));
    return 1;
  }
  process.on('SIGHUP', () => void primary.reload());
  let stopping = false;
  const stop = () => {
    // A second signal while stopping: no more waiting.
    if (stopping) process.exit(1);
    stopping = true;
    void primary.stop().then(() => process.exit(0));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  // Stay up: the workers and listeners keep the event loop alive.
  return new Promise<number>(() => {});
}
