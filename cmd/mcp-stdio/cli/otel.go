package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/mcp-stdio/mcp-stdio/mw"
	"github.com/mcp-stdio/mcp-stdio/transport"
)

// otelFromEnv returns the span exporter and sampler OpenTelemetry's
// standard environment variables ask for, or a nil exporter when they
// ask for none: no OTEL_EXPORTER_OTLP_TRACES_ENDPOINT nor
// OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_SDK_DISABLED=true or
// OTEL_TRACES_EXPORTER=none. Spans go over OTLP/HTTP as http/protobuf;
// another OTEL_EXPORTER_OTLP_PROTOCOL, or a setting it cannot use, is
// said in one warning, and then no spans are sent (a bad header, timeout
// or sampler setting only falls back to its default). Read are also
// OTEL_EXPORTER_OTLP_HEADERS, OTEL_EXPORTER_OTLP_TIMEOUT (and their
// _TRACES_ forms), OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES,
// OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG, the TLS settings of
// [otlpTLSConfig], and the proxy variables. scope names the
// spans' instrumentation scope.
func otelFromEnv(getenv func(string) string, version, scope string, log *slog.Logger) (*transport.OTLPExporter, mw.Sampler) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return nil, nil
	}
	signal := func(name string) string { // the _TRACES_ form wins
		if v := getenv("OTEL_EXPORTER_OTLP_TRACES_" + name); v != "" {
			return v
		}
		return getenv("OTEL_EXPORTER_OTLP_" + name)
	}
	target := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if target == "" {
		base := getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
		if base == "" {
			return nil, nil
		}
		target = strings.TrimSuffix(base, "/") + "/v1/traces"
	}
	switch exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exp {
	case "", "otlp":
	case "none":
		return nil, nil
	default:
		log.Warn("no spans are sent: OTEL_TRACES_EXPORTER=" + exp + " is not supported; unset it or set it to otlp")
		return nil, nil
	}
	switch p := signal("PROTOCOL"); p {
	case "", "http/protobuf":
	default:
		log.Warn("no spans are sent: OTEL_EXPORTER_OTLP_PROTOCOL=" + p + " is not supported; set it to http/protobuf and point OTEL_EXPORTER_OTLP_ENDPOINT at the collector's OTLP/HTTP port (4318)")
		return nil, nil
	}
	if u, err := url.Parse(target); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		log.Warn("no spans are sent: the OTLP endpoint is not an http(s) URL; set OTEL_EXPORTER_OTLP_ENDPOINT to one such as http://localhost:4318")
		return nil, nil
	}
	timeout := transport.DefaultOTLPTimeout
	if v := signal("TIMEOUT"); v != "" {
		if ms, err := strconv.Atoi(v); err == nil && ms > 0 {
			timeout = time.Duration(ms) * time.Millisecond
		} else {
			log.Warn("OTEL_EXPORTER_OTLP_TIMEOUT must be milliseconds; using the default", "default", timeout)
		}
	}
	header := http.Header{}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"} {
		pairs, ok := keyValues(getenv(name))
		if !ok {
			log.Warn(name + " must be key=value pairs separated by commas, values URL-encoded; some were skipped")
		}
		for i := 0; i+1 < len(pairs); i += 2 {
			header.Set(pairs[i], pairs[i+1])
		}
	}
	resource, ok := keyValues(getenv("OTEL_RESOURCE_ATTRIBUTES"))
	if !ok {
		log.Warn("OTEL_RESOURCE_ATTRIBUTES must be key=value pairs separated by commas, values URL-encoded; some were skipped")
	}
	resource = setAttr(resource, "service.name", getenv("OTEL_SERVICE_NAME"), true)
	resource = setAttr(resource, "service.name", "mcp-stdio", false)
	resource = setAttr(resource, "service.version", version, false)
	tlsConfig, err := otlpTLSConfig(signal)
	if err != nil {
		log.Warn("no spans are sent: " + err.Error())
		return nil, nil
	}
	return transport.NewOTLPExporter(transport.OTLPConfig{
		URL:     target,
		Header:  header,
		Timeout: timeout,
		// Proxies from HTTPS_PROXY, HTTP_PROXY and NO_PROXY (never for
		// a loopback collector), as OpenTelemetry's SDKs take them.
		Client:       transport.NewHTTPClient(transport.HTTPOptions{Getenv: getenv, TLSClientConfig: tlsConfig}),
		Resource:     resource,
		ScopeName:    scope,
		ScopeVersion: version,
		Logger:       log,
	}), samplerFromEnv(getenv, log)
}

// otlpTLSConfig returns the TLS configuration of OpenTelemetry's
// OTEL_EXPORTER_OTLP_CERTIFICATE (the PEM file of the CAs that alone are
// trusted for the collector's certificate, as the SDKs read it), and
// OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE with OTEL_EXPORTER_OTLP_CLIENT_KEY
// (a client certificate for a collector that asks for one); signal reads
// a setting, its _TRACES_ form first. It returns nil, nil when none is set.
func otlpTLSConfig(signal func(string) string) (*tls.Config, error) {
	ca, cert, key := signal("CERTIFICATE"), signal("CLIENT_CERTIFICATE"), signal("CLIENT_KEY")
	if ca == "" && cert == "" && key == "" {
		return nil, nil
	}
	cfg := &tls.Config{}
	if ca != "" {
		cfg.RootCAs = x509.NewCertPool()
		if err := addPEMFile(cfg.RootCAs, "OTEL_EXPORTER_OTLP_CERTIFICATE", ca); err != nil {
			return nil, err
		}
	}
	switch {
	case cert == "" && key == "":
	case cert == "" || key == "":
		return nil, errors.New("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and OTEL_EXPORTER_OTLP_CLIENT_KEY go together: set both (PEM files) or neither")
	default:
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("the OTLP client certificate (OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE %s, OTEL_EXPORTER_OTLP_CLIENT_KEY %s): %w", cert, key, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// samplerFromEnv returns the sampler OTEL_TRACES_SAMPLER names.
func samplerFromEnv(getenv func(string) string, log *slog.Logger) mw.Sampler {
	name := strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER"))
	ratio := 1.0
	if strings.HasSuffix(name, "traceidratio") {
		if arg := getenv("OTEL_TRACES_SAMPLER_ARG"); arg != "" {
			r, err := strconv.ParseFloat(arg, 64)
			if err != nil || r < 0 || r > 1 {
				log.Warn("OTEL_TRACES_SAMPLER_ARG must be a ratio between 0 and 1; using 1")
			} else {
				ratio = r
			}
		}
	}
	switch name {
	case "", "parentbased_always_on":
		return mw.RatioSampler(1, true)
	case "always_on":
		return mw.RatioSampler(1, false)
	case "always_off":
		return mw.RatioSampler(0, false)
	case "parentbased_always_off":
		return mw.RatioSampler(0, true)
	case "traceidratio":
		return mw.RatioSampler(ratio, false)
	case "parentbased_traceidratio":
		return mw.RatioSampler(ratio, true)
	}
	log.Warn("OTEL_TRACES_SAMPLER=" + name + " is not supported; using parentbased_always_on (also: always_on, always_off, traceidratio, parentbased_always_off, parentbased_traceidratio)")
	return mw.RatioSampler(1, true)
}

// keyValues parses OpenTelemetry's key=value,key=value lists (headers,
// resource attributes), values URL-encoded, into pairs; ok is false when
// an entry had to be skipped.
func keyValues(s string) (pairs []string, ok bool) {
	ok = true
	for entry := range strings.SplitSeq(s, ",") {
		if strings.TrimSpace(entry) == "" {
			continue
		}
		k, v, found := strings.Cut(entry, "=")
		k = strings.TrimSpace(k)
		val, err := url.PathUnescape(strings.TrimSpace(v))
		if !found || k == "" || err != nil {
			ok = false
			continue
		}
		pairs = append(pairs, k, val)
	}
	return pairs, ok
}

// setAttr sets key in pairs to value (when value is not empty): always
// with replace, else only when key is absent.
func setAttr(pairs []string, key, value string, replace bool) []string {
	if value == "" {
		return pairs
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i] == key {
			if replace {
				pairs[i+1] = value
			}
			return pairs
		}
	}
	return append(pairs, key, value)
}

// shutdownSpans sends the spans still queued, for at most limit, when the
// command ends; what is still queued then is dropped, and said so.
func shutdownSpans(ctx context.Context, e *transport.OTLPExporter, limit time.Duration, log *slog.Logger) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), limit)
	defer cancel()
	if err := e.Shutdown(sctx); err != nil {
		log.Warn("spans still queued at exit were dropped", "spans_dropped", e.Dropped())
	}
}
