package toolspec_test

import (
	"fmt"

	"github.com/splashfabric/splashfabric/toolspec"
)

func ExampleParse() {
	catalog := []byte(`
tools:
  - name: text.upper
    description: Upper-cases its input.
  - name: demo.sum
    format: json
    input_schema:
      type: object
      properties: {a: {type: integer}, b: {type: integer}}
      required: [a, b]
    output_schema: {type: integer}
    max_attempts: 3
    deadline: 30s
`)
	cat, err := toolspec.Parse(catalog, "/etc/splash")
	if err != nil {
		fmt.Println(err)
		return
	}
	set, err := cat.Compile()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(set.Names())

	sum, _ := set.Lookup("demo.sum")
	spec := sum.Spec()
	fmt.Println(spec.Format, spec.MaxAttempts, spec.Deadline, spec.MaxOutputBytes)
	fmt.Println(sum.ValidateInput(`{"a": 1, "b": 2}`))
	fmt.Println(sum.ValidateInput(`{"a": 1, "b": "two"}`))

	_, err = toolspec.Parse([]byte("tools:\n  - name: demo.sum\n    max_attempts: 0\n    deadline: 30\n"), ".")
	fmt.Println(err)
	// Output:
	// [demo.sum text.upper]
	// json 3 30s 1048576
	// <nil>
	// toolspec: payload breaks the tool's contract: input does not match the input schema at #/properties/b/type
	// toolspec: tool "demo.sum": field "deadline": invalid value: a duration is a string such as "30s", not a number
}
