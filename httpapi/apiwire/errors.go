package apiwire

// ErrorBody is the one shape every error response has:
// {"error":{"code":"...","message":"..."}}.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is an error response's code (stable, machine-readable) and
// message (for people). Scope is the scope a 403 missing_scope lacked;
// Tool the pattern a 403 tool_not_permitted refused.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Scope   string `json:"scope,omitempty"`
	Tool    string `json:"tool,omitempty"`
}
