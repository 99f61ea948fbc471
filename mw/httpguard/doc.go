// Package httpguard holds serve's HTTP guards: [Guard]s, http.Handler
// wrappers that decide on a request's method, path and headers alone,
// before any body is read and before any message exists — the Origin and
// Host checks against DNS rebinding ([CheckOrigin], [CheckHost]), the
// paths served ([ServePaths], [Mount]), CORS, the bearer token
// ([RequireBearer]) or OAuth access token ([RequireOAuth], which puts the
// principal in the request's context with mw.WithPrincipal), the body cap
// ([LimitBody]), health answers ([AnswerHealth]) and the count of what
// they refuse ([CountRefusals]). [Guards] stacks them in order; package
// mw's documentation draws where they sit in serve's pipeline, and the
// message stages (package mw) take over from there.
package httpguard
