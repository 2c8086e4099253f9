package host

import (
	"reflect"

	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/file"
)

// goja cannot pause a running script: its interrupt unwinds the stack
// for good. So that a CPU-bound slice still gives way to others after a
// quantum, every script calls a yield point at the top of each function
// body and of each loop turn: any computation that runs long must turn
// one or the other many times. The yield point is a native function
// that returns at once unless the slice's quantum is over; then the
// slice pauses inside it, its JavaScript stack intact, and goes on where
// it was when its turn comes again (see scriptEngine.yield).
//
// The yield point reaches the script as a parameter of a wrapper
// function, under a name no JavaScript source can spell, so a script can
// neither call nor shadow it. A closure variable is read in a few
// instructions; measured on a tight loop it costs as much as the loop's
// own body (BenchmarkYieldPoints).

// yieldName is the binding of the yield point: not an identifier the
// parser accepts.
const yieldName = "%yield"

func yieldIdent(at file.Idx) *ast.Identifier { return &ast.Identifier{Name: yieldName, Idx: at} }

// yieldCall is the statement `%yield()`.
func yieldCall(at file.Idx) *ast.ExpressionStatement {
	return &ast.ExpressionStatement{Expression: yieldExpr(at)}
}

func yieldExpr(at file.Idx) *ast.CallExpression {
	return &ast.CallExpression{Callee: yieldIdent(at), LeftParenthesis: at, RightParenthesis: at}
}

var astPkg = reflect.TypeFor[ast.Program]().PkgPath()

// instrument puts a yield point at the top of every function body and of
// every loop body in the tree. It walks every field of every node by
// reflection, so a node type goja adds later is walked too, not skipped.
func instrument(n ast.Node) { walkAST(reflect.ValueOf(n)) }

func walkAST(v reflect.Value) {
	switch v.Kind() {
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			return
		}
		walkAST(v.Elem())
		if v.Kind() == reflect.Pointer && v.CanInterface() {
			addYield(v.Interface())
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			walkAST(v.Index(i))
		}
	case reflect.Struct:
		if v.Type().PkgPath() != astPkg {
			return
		}
		for i := 0; i < v.NumField(); i++ {
			walkAST(v.Field(i))
		}
	}
}

// addYield instruments one node, once its children are.
func addYield(n any) {
	switch n := n.(type) {
	case *ast.FunctionLiteral:
		n.Body.List = prependYield(n.Body.List, n.Body.LeftBrace)
	case *ast.ArrowFunctionLiteral:
		switch b := n.Body.(type) {
		case *ast.BlockStatement:
			b.List = prependYield(b.List, b.LeftBrace)
		case *ast.ExpressionBody:
			at := b.Expression.Idx0()
			b.Expression = &ast.SequenceExpression{Sequence: []ast.Expression{yieldExpr(at), b.Expression}}
		}
	case *ast.ForStatement:
		n.Body = yieldingBody(n.Body)
	case *ast.ForInStatement:
		n.Body = yieldingBody(n.Body)
	case *ast.ForOfStatement:
		n.Body = yieldingBody(n.Body)
	case *ast.WhileStatement:
		n.Body = yieldingBody(n.Body)
	case *ast.DoWhileStatement:
		n.Body = yieldingBody(n.Body)
	}
}

// prependYield puts a yield point after a body's directive prologue
// ("use strict"), which must stay first to be one.
func prependYield(list []ast.Statement, at file.Idx) []ast.Statement {
	i := 0
	for ; i < len(list); i++ {
		es, ok := list[i].(*ast.ExpressionStatement)
		if !ok {
			break
		}
		if _, ok := es.Expression.(*ast.StringLiteral); !ok {
			break
		}
	}
	out := make([]ast.Statement, 0, len(list)+1)
	out = append(out, list[:i]...)
	out = append(out, yieldCall(at))
	return append(out, list[i:]...)
}

// yieldingBody is a loop body that yields first on every turn.
func yieldingBody(body ast.Statement) ast.Statement {
	at := body.Idx0()
	return &ast.BlockStatement{LeftBrace: at, List: []ast.Statement{yieldCall(at), body}, RightBrace: at}
}
