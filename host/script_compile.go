package host

import (
	"github.com/dop251/goja"
	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/parser"
)

// A script runs as the body of an async function so that `await` works at
// the top level exactly as written. The prefix shares the first line with
// the source, so line numbers in errors match the script's own lines.
const (
	scriptPrefix = "(async function () {"
	scriptSuffix = "\n})()"
	// scriptName names the source in stacks and syntax errors.
	scriptName = "script"
)

// compile turns a script into a program whose completion value is the
// promise of its async body. Scripts are strict-mode code: an assignment
// to an undeclared name is an error rather than a global that the next
// script on the same runtime would see. The script's result is the value of a
// top-level `return`, or else of its final statement when that statement
// is an expression (`1 + 2` at the end yields "3"); otherwise it is
// undefined.
func compile(source string) (*goja.Program, error) {
	wrapped := scriptPrefix + source + scriptSuffix
	tree, err := parser.ParseFile(nil, scriptName, wrapped, 0)
	if err != nil {
		return nil, err
	}
	if at, ok := finalExpressionStart(tree, len(scriptPrefix)); ok {
		// Returning the final expression is a textual rewrite; should it
		// ever not compile (a position the parser reports oddly), the
		// script still runs as written, with an undefined result.
		rewritten := wrapped[:at] + "return " + wrapped[at:]
		if prg, err := goja.Compile(scriptName, rewritten, true); err == nil {
			return prg, nil
		}
	}
	return goja.CompileAST(tree, true)
}

// finalExpressionStart finds where the script's last statement begins when
// that statement is an expression, as an offset into the wrapped source.
func finalExpressionStart(tree *ast.Program, bodyStart int) (int, bool) {
	if len(tree.Body) != 1 {
		return 0, false
	}
	body := asyncBody(tree.Body[0])
	if body == nil || len(body.List) == 0 {
		return 0, false
	}
	last, ok := body.List[len(body.List)-1].(*ast.ExpressionStatement)
	if !ok {
		return 0, false
	}
	at := int(last.Idx0()) - 1 // file.Idx counts from 1
	// The parser reports a parenthesised expression from inside its
	// parentheses; step back over them so `return` precedes the whole.
	// Never past a line break: `return` followed by one returns nothing.
	for at > bodyStart {
		c := tree.File.Source()[at-1]
		if c != '(' && c != ' ' && c != '\t' {
			break
		}
		at--
	}
	if at < bodyStart {
		return 0, false
	}
	return at, true
}

// asyncBody returns the body of the wrapper function in `(async function
// () {...})()`.
func asyncBody(s ast.Statement) *ast.BlockStatement {
	es, ok := s.(*ast.ExpressionStatement)
	if !ok {
		return nil
	}
	call, ok := es.Expression.(*ast.CallExpression)
	if !ok {
		return nil
	}
	fn, ok := call.Callee.(*ast.FunctionLiteral)
	if !ok {
		return nil
	}
	return fn.Body
}
