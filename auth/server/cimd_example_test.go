package server_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcp-stdio/mcp-stdio/auth/server"
)

// The authorization endpoint asks the fetcher for the registration of a
// client whose client_id is a URL. Only allowlisted URLs are fetched: any
// other is refused without network access, and the token endpoint's
// re-check says the same.
func ExampleClientMetadataFetcher() {
	f, err := server.NewClientMetadataFetcher(server.ClientMetadataConfig{
		AllowURLs: []string{"https://app.example.com/oauth/client.json"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	// In /authorize, with no lock of the authorization server held:
	_, err = f.Fetch(context.Background(), "https://other.example.com/client.json")
	fmt.Println(errors.Is(err, server.ErrClientIDNotAllowed))
	// In /token, for a code issued to a URL-shaped client_id:
	fmt.Println(f.StillAllowed("https://app.example.com/oauth/client.json"))
	fmt.Println(f.StillAllowed("https://app.example.com/oauth/client.json/"))

	fmt.Println(server.CheckClientIDURL("http://app.example.com/client.json"))
	// Output:
	// true
	// true
	// false
	// invalid --allow-client-id-url "http://app.example.com/client.json": not https; give the exact https URL the client uses as its client_id, such as https://app.example.com/oauth/client.json
}
