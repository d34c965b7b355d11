package anthropic

import (
	"encoding/json"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/lite-agent/lite-agent/provider"
)

// requestBody encodes p — whose messages' encodings are raws — as the
// request body: the SDK encodes everything but the messages, and the
// messages are joined in from raws as they are, instead of the SDK
// re-reading (compacting) each of them on every call. It returns p with
// the messages left out, for the SDK's own use of the parameters.
func requestBody(p sdk.MessageNewParams, raws [][]byte) (sdk.MessageNewParams, []byte, error) {
	p.Messages = []sdk.MessageParam{param.Override[sdk.MessageParam](json.RawMessage(provider.MessagesSlot))}
	head, err := p.MarshalJSON()
	if err != nil {
		return p, nil, err
	}
	body, err := provider.JoinBody(head, raws)
	p.Messages = nil
	return p, body, err
}
