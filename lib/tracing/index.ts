// OpenTelemetry traces, only when `tracing.otlp_endpoint` is set: the SDK and the OTLP/HTTP exporter
// are imported here, on start, and nowhere else, so a gateway without tracing loads none of them and
// its requests run no tracing code (the chain then holds no tracing plugins).
// No global provider, context manager or propagator is registered: contexts are passed explicitly,
// so the gateway's tracing cannot clash with an application embedding it.
import type { TracingConfig } from '../config-types.js';
import type { Logger } from '../log.js';
import type { Plugin } from '../plugin.js';
import { tracingPlugins } from './spans.js';

export interface Tracing {
  /** `first` goes before the configured plugins, `last` after them (lib/tracing/spans.ts says why). */
  plugins: { first: Plugin; last: Plugin };
  /** Export what is waiting (tests, before a check). Never rejects: a failure is logged. */
  flush(): Promise<void>;
  /** Export what is waiting (for at most CLOSE_WAIT_MS) and stop. Never rejects. */
  close(): Promise<void>;
}

export async function startTracing(cfg: TracingConfig, log: Logger): Promise<Tracing> {
  const [api, core, resources, sdk, otlp] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/core'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/exporter-trace-otlp-http'),
  ]);
  // Export failures (collector away) are the SDK's diagnostics: warnings in our log, not thrown.
  api.diag.setLogger(
    {
      error: (msg) => log('warn', `tracing: ${msg}`),
      warn: (msg) => log('warn', `tracing: ${msg}`),
      info: () => {},
      debug: () => {},
      verbose: () => {},
    },
    // Another gateway in the process (tests) set it before: no warning about replacing it.
    { logLevel: api.DiagLogLevel.WARN, suppressOverrideMessage: true },
  );
  const exporter = new otlp.OTLPTraceExporter({ url: `${cfg.otlp_endpoint.replace(/\/+$/, '')}/v1/traces` });
  const provider = new sdk.BasicTracerProvider({
    resource: resources.resourceFromAttributes({ 'service.name': cfg.service_name }),
    spanProcessors: [new sdk.BatchSpanProcessor(exporter)],
  });
  const plugins = tracingPlugins({
    tracer: provider.getTracer('llm-gateway'),
    propagator: new core.W3CTraceContextPropagator(),
    root: api.ROOT_CONTEXT,
    setSpan: api.trace.setSpan,
    SpanKind: api.SpanKind,
    SpanStatusCode: api.SpanStatusCode,
  });
  log('info', 'tracing: spans are exported over OTLP/HTTP', { collector: new URL(cfg.otlp_endpoint).host });
  const failed = (e: unknown) => log('warn', `tracing: spans could not be exported: ${(e as Error).message ?? e}`);
  return {
    plugins,
    flush: () => provider.forceFlush().catch(failed),
    // A collector away would hold the shutdown for the exporter's retries (10 s): its spans are given up sooner.
    close: () => {
      let timer: NodeJS.Timeout | undefined;
      const givenUp = new Promise<void>((resolve) => {
        timer = setTimeout(() => {
          log('warn', 'tracing: the last spans were not exported before the shutdown');
          resolve();
        }, CLOSE_WAIT_MS);
      });
      return Promise.race([provider.shutdown().catch(failed), givenUp]).finally(() => clearTimeout(timer));
    },
  };
}

/** How long closing waits for the last spans to be exported. */
const CLOSE_WAIT_MS = 2000;
