/**
 * prom-client's classes, each from its own file. Its index also loads the Pushgateway (http,
 * https, zlib, url) and the cluster aggregator (cluster, and with it child_process, dgram), none
 * of which a server uses, and they cost resident memory at every start (measured in RESULTS,
 * session 29). Their types are prom-client's own (`Prom.Counter` and so on).
 */
import type * as Prom from 'prom-client';
import counter from 'prom-client/lib/counter.js';
import defaultMetrics from 'prom-client/lib/defaultMetrics.js';
import gauge from 'prom-client/lib/gauge.js';
import histogram from 'prom-client/lib/histogram.js';
import registry from 'prom-client/lib/registry.js';

export const Registry = registry as typeof Prom.Registry;
export const Counter = counter as typeof Prom.Counter;
export const Gauge = gauge as typeof Prom.Gauge;
export const Histogram = histogram as typeof Prom.Histogram;
export const collectDefaultMetrics = defaultMetrics as typeof Prom.collectDefaultMetrics;
