package cli

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// caFileLimit bounds one --ca-file: a bundle of every public CA is about
// 250 KB, so 16 MiB is a mistake (a wrong path), not a bundle.
const caFileLimit = 16 << 20

// caTLSConfig returns the TLS configuration that trusts the system's
// roots plus the certificates of every PEM file in files, or nil (the
// system's roots alone) when files is empty. A file that cannot be read,
// or that holds no certificate, is an error naming it.
func caTLSConfig(files []string) (*tls.Config, error) {
	if len(files) == 0 {
		return nil, nil
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		// No system pool on this platform: the files alone are trusted.
		pool = x509.NewCertPool()
	}
	for _, name := range files {
		if err := addPEMFile(pool, "--ca-file", name); err != nil {
			return nil, err
		}
	}
	return &tls.Config{RootCAs: pool}, nil
}

// addPEMFile adds the certificates of the PEM file name to pool. An error
// names the file and what gave it (a flag, an environment variable).
func addPEMFile(pool *x509.CertPool, what, name string) error {
	st, err := os.Stat(name)
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, name, errors.Unwrap(err))
	}
	if st.Size() > caFileLimit {
		return fmt.Errorf("%s %s: %d bytes is not a CA bundle (at most 16MiB)", what, name, st.Size())
	}
	pem, err := os.ReadFile(name)
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, name, errors.Unwrap(err))
	}
	if !pool.AppendCertsFromPEM(pem) {
		return fmt.Errorf("%s %s: no PEM certificate in it (want -----BEGIN CERTIFICATE----- blocks)", what, name)
	}
	return nil
}

// certificateAdvice says what to do about a server certificate that did
// not verify because no trusted authority signed it, or "" for other
// errors. given is whether --ca-file was given.
func certificateAdvice(err error, given bool) string {
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) {
		return ""
	}
	if given {
		return "the server's certificate is signed by an authority neither this machine nor --ca-file trusts: check that the file holds the CA that signs it (your network's TLS inspection, or the server's own CA)"
	}
	return "the server's certificate is signed by an authority this machine does not trust: if it is your organisation's (a TLS-inspecting proxy) or the server's own CA, trust it with --ca-file PEM"
}
