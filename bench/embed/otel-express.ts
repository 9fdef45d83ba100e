// OpenTelemetry for the Express 5 app of `npm run bench -- embed`, loaded before the app
// with `node --import ./dist/bench/embed/otel-express.js dist/bench/embed/express-none.js`:
// the app is express-none.ts unchanged, and every line here is glue. Metrics only, in the
// smallest set that gives http.route: the ESM loader hook (the app imports express), the
// AsyncLocalStorage context manager (Express's instrumentation hands the route to the http
// instrumentation's histogram http.server.request.duration through the active context),
// a MeterProvider whose reader is the Prometheus exporter, and the http and express
// instrumentations. No tracer provider: spans are no-ops, OpenTelemetry at its cheapest.
// node:cluster forks with the same --import, so each worker has its own exporter, on the
// metrics port + its worker id (OpenTelemetry has no cluster aggregation: each worker is a
// scrape target of its own). The primary, which serves no request, sets up nothing.
import cluster from 'node:cluster';
import { register } from 'node:module';
import { context, metrics } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { ExpressInstrumentation } from '@opentelemetry/instrumentation-express';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { MeterProvider } from '@opentelemetry/sdk-metrics';

if (cluster.isWorker) {
  register('@opentelemetry/instrumentation/hook.mjs', import.meta.url);
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  const port = Number(process.argv[3]) + cluster.worker!.id;
  metrics.setGlobalMeterProvider(new MeterProvider({ readers: [new PrometheusExporter({ host: '127.0.0.1', port })] }));
  registerInstrumentations({ instrumentations: [new HttpInstrumentation(), new ExpressInstrumentation()] });
}
