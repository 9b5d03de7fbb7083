package server

func (s *Server) pages() {}
