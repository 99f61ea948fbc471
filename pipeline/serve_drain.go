// Draining: the state of a Server between the start of its drain and its
// end.

package pipeline

// Draining reports whether the server drains for shutdown: [Server.Drain]
// or [Server.Close] has begun. It does not block.
func (s *Server) Draining() bool { return s.draining.Load() }
