package host

import (
	"errors"

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

// errUnbalanced marks a source that closes the function it is run in.
var errUnbalanced = errors.New("the script closes the function it runs in (its braces do not balance)")

// compile turns a script into a program whose completion value is a
// function of the realm's yield point (see yieldName) that starts the
// script and returns the promise of its async body. Scripts are
// strict-mode code: an assignment to an undeclared name is an error
// rather than a global that the next script on the same runtime would
// see. The script's result is the value of a top-level `return`, or else
// of its final statement when that statement is an expression (`1 + 2`
// at the end yields "3"); otherwise it is undefined.
//
// Every loop and function of the script yields to the scheduler at each
// turn (see instrument), so that no slice holds the engine longer than a
// quantum while others wait.
func compile(source string) (*goja.Program, error) {
	tree, err := parser.ParseFile(nil, scriptName, scriptPrefix+source+scriptSuffix, 0)
	if err != nil {
		return nil, err
	}
	body := (*ast.BlockStatement)(nil)
	if len(tree.Body) == 1 {
		body = asyncBody(tree.Body[0])
	}
	if body == nil {
		// The source closed the wrapper and went on outside it.
		return nil, errUnbalanced
	}
	if n := len(body.List); n > 0 {
		if last, ok := body.List[n-1].(*ast.ExpressionStatement); ok {
			body.List[n-1] = &ast.ReturnStatement{Return: last.Idx0(), Argument: last.Expression}
		}
	}
	return compileYielding(tree, true)
}

// compileYielding instruments tree, a program of one expression
// statement, and compiles it as `(function (yield) { return <it> })`.
func compileYielding(tree *ast.Program, strict bool) (*goja.Program, error) {
	instrument(tree)
	expr := tree.Body[0].(*ast.ExpressionStatement).Expression
	at := expr.Idx0()
	tree.Body = []ast.Statement{&ast.ExpressionStatement{Expression: &ast.FunctionLiteral{
		Function:      at,
		ParameterList: &ast.ParameterList{Opening: at, List: []*ast.Binding{{Target: yieldIdent(at)}}, Closing: at},
		Body: &ast.BlockStatement{LeftBrace: at, RightBrace: at, List: []ast.Statement{
			&ast.ReturnStatement{Return: at, Argument: expr},
		}},
	}}}
	return goja.CompileAST(tree, strict)
}

// asyncBody returns the body of the wrapper function in `(async function
// () {...})()`.
func asyncBody(s ast.Statement) *ast.BlockStatement {
	es, ok := s.(*ast.ExpressionStatement)
	if !ok {
		return nil
	}
	call, ok := es.Expression.(*ast.CallExpression)
	if !ok || len(call.ArgumentList) > 0 {
		return nil
	}
	fn, ok := call.Callee.(*ast.FunctionLiteral)
	if !ok {
		return nil
	}
	return fn.Body
}
