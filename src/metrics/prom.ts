/**
 * prom-client's classes, each from its own file. Its index also loads the Pushgateway (http,
 * https, zlib, url) and the cluster aggregator (cluster, and with it child_process, dgram), none
 * of which a server uses, and they cost resident memory at every start (measured in RESULTS,
 * session 29). The types are prom-client's own declarations (prom-client-lib.d.ts).
 */
import type * as Prom from 'prom-client';
import counter from 'prom-client/lib/counter.js';
import defaultMetrics from 'prom-client/lib/defaultMetrics.js';
import gauge from 'prom-client/lib/gauge.js';
import histogram from 'prom-client/lib/histogram.js';
import registry from 'prom-client/lib/registry.js';

export const Registry = registry;
export const Counter = counter;
export const Gauge = gauge;
export const Histogram = histogram;
export const collectDefaultMetrics = defaultMetrics;
export type Registry = Prom.Registry;
export type Counter<T extends string = string> = Prom.Counter<T>;
export type Gauge<T extends string = string> = Prom.Gauge<T>;
export type Histogram<T extends string = string> = Prom.Histogram<T>;
