package sim

// Task is a change an agent was asked to make: its issue text and the
// reference patch (the change a maintainer would have written).
type Task struct {
	ID    string
	Title string
	Issue string
	// Reference is the core of the change; agents' patches contain it (or
	// Alternative, an equivalent form) plus their signals.
	Reference   Snippet
	Alternative string
}

// Tasks are the simulated world's issues.
var Tasks = []*Task{
	{
		ID: "SIM-101", Title: "Reject orders with no items",
		Issue: "Creating an order with an empty item list succeeds and produces an order that can never be paid. `CreateOrder` should return `ErrEmptyOrder` when the order has no items.",
		Reference: Snippet{"orders/create.go",
			"func CreateOrder(ctx context.Context, o Order) (*Order, error) {\n\to.Status = StatusNew\n\treturn repo.Insert(ctx, o)\n}\n",
			"func CreateOrder(ctx context.Context, o Order) (*Order, error) {\n\tif len(o.Items) == 0 {\n\t\treturn nil, ErrEmptyOrder\n\t}\n\to.Status = StatusNew\n\treturn repo.Insert(ctx, o)\n}\n"},
		Alternative: "func CreateOrder(ctx context.Context, o Order) (*Order, error) {\n\tif o.Items == nil || len(o.Items) < 1 {\n\t\treturn nil, ErrEmptyOrder\n\t}\n\to.Status = StatusNew\n\treturn repo.Insert(ctx, o)\n}\n",
	},
	{
		ID: "SIM-102", Title: "Trim whitespace from user names",
		Issue: "User names are stored with leading and trailing spaces when users paste them, which breaks lookups. Normalise names in `NewUser` by trimming surrounding white space.",
		Reference: Snippet{"users/user.go",
			"func NewUser(name, email string) User {\n\treturn User{Name: name, Email: strings.ToLower(email)}\n}\n",
			"func NewUser(name, email string) User {\n\treturn User{Name: strings.TrimSpace(name), Email: strings.ToLower(email)}\n}\n"},
		Alternative: "func NewUser(name, email string) User {\n\tname = strings.TrimSpace(name)\n\treturn User{Name: name, Email: strings.ToLower(email)}\n}\n",
	},
	{
		ID: "SIM-103", Title: "Retry uploads on 503",
		Issue: "Uploads fail permanently when the storage service answers 503 during deploys. `Upload` should retry up to three times on a 503 before giving up.",
		Reference: Snippet{"storage/upload.go",
			"func (c *Client) Upload(ctx context.Context, key string, body []byte) error {\n\treturn c.put(ctx, key, body)\n}\n",
			"func (c *Client) Upload(ctx context.Context, key string, body []byte) error {\n\tvar err error\n\tfor attempt := 0; attempt < 3; attempt++ {\n\t\tif err = c.put(ctx, key, body); !isUnavailable(err) {\n\t\t\treturn err\n\t\t}\n\t}\n\treturn err\n}\n"},
		Alternative: "func (c *Client) Upload(ctx context.Context, key string, body []byte) error {\n\terr := c.put(ctx, key, body)\n\tfor i := 1; i < 3 && isUnavailable(err); i++ {\n\t\terr = c.put(ctx, key, body)\n\t}\n\treturn err\n}\n",
	},
	{
		ID: "SIM-104", Title: "Paginate the item list",
		Issue: "`GET /items` returns every item at once and times out for large catalogues. Accept `limit` and `offset` query parameters and return one page.",
		Reference: Snippet{"api/items.go",
			"func listItems(w http.ResponseWriter, r *http.Request) {\n\titems := catalogue.All()\n\twriteJSON(w, items)\n}\n",
			"func listItems(w http.ResponseWriter, r *http.Request) {\n\tlimit, offset := pageParams(r.URL.Query())\n\titems := catalogue.Page(limit, offset)\n\twriteJSON(w, items)\n}\n"},
		Alternative: "func listItems(w http.ResponseWriter, r *http.Request) {\n\tq := r.URL.Query()\n\tlimit, offset := pageParams(q)\n\twriteJSON(w, catalogue.Page(limit, offset))\n}\n",
	},
	{
		ID: "SIM-105", Title: "Expire sessions after 24 hours",
		Issue: "Sessions never expire. `Valid` should report false for sessions created more than 24 hours ago.",
		Reference: Snippet{"session/session.go",
			"func (s *Session) Valid(now time.Time) bool {\n\treturn s.UserID != \"\"\n}\n",
			"func (s *Session) Valid(now time.Time) bool {\n\treturn s.UserID != \"\" && now.Sub(s.Created) < 24*time.Hour\n}\n"},
		Alternative: "func (s *Session) Valid(now time.Time) bool {\n\tif s.UserID == \"\" {\n\t\treturn false\n\t}\n\treturn now.Before(s.Created.Add(24 * time.Hour))\n}\n",
	},
	{
		ID: "SIM-106", Title: "Case-insensitive tag search",
		Issue: "Searching for the tag `Go` does not find items tagged `go`. Make `HasTag` compare tags without regard to case.",
		Reference: Snippet{"model/tags.go",
			"func (it Item) HasTag(tag string) bool {\n\treturn slices.Contains(it.Tags, tag)\n}\n",
			"func (it Item) HasTag(tag string) bool {\n\treturn slices.ContainsFunc(it.Tags, func(t string) bool { return strings.EqualFold(t, tag) })\n}\n"},
		Alternative: "func (it Item) HasTag(tag string) bool {\n\tfor _, t := range it.Tags {\n\t\tif strings.EqualFold(t, tag) {\n\t\t\treturn true\n\t\t}\n\t}\n\treturn false\n}\n",
	},
	{
		ID: "SIM-107", Title: "Report the config file's path in parse errors",
		Issue: "A syntax error in the config file is reported without saying which file. Wrap parse errors with the path.",
		Reference: Snippet{"config/parse.go",
			"func parseFile(path string, b []byte) (*Config, error) {\n\tvar c Config\n\treturn &c, toml.Unmarshal(b, &c)\n}\n",
			"func parseFile(path string, b []byte) (*Config, error) {\n\tvar c Config\n\tif err := toml.Unmarshal(b, &c); err != nil {\n\t\treturn nil, fmt.Errorf(\"parse %s: %w\", path, err)\n\t}\n\treturn &c, nil\n}\n"},
		Alternative: "func parseFile(path string, b []byte) (*Config, error) {\n\tc := new(Config)\n\tif err := toml.Unmarshal(b, c); err != nil {\n\t\treturn nil, fmt.Errorf(\"parse %s: %w\", path, err)\n\t}\n\treturn c, nil\n}\n",
	},
	{
		ID: "SIM-108", Title: "Round prices to cents",
		Issue: "Discounted prices come out with fractions of a cent. `ApplyDiscount` should round the result to the nearest cent, halves away from zero.",
		Reference: Snippet{"billing/discount.go",
			"func ApplyDiscount(cents int64, pct float64) int64 {\n\treturn int64(float64(cents) * (1 - pct/100))\n}\n",
			"func ApplyDiscount(cents int64, pct float64) int64 {\n\treturn int64(math.Round(float64(cents) * (1 - pct/100)))\n}\n"},
		Alternative: "func ApplyDiscount(cents int64, pct float64) int64 {\n\tv := float64(cents) * (1 - pct/100)\n\treturn int64(math.Round(v))\n}\n",
	},
}
