//! Messages built with the crate's types validate against the official schema of their
//! revision, and every 2026-07-28 example validates against its own definition.

// Test helpers outside `#[test]` functions may panic too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use mcpl_core::ProtocolVersion;
use mcpl_core::jsonrpc::ErrorObject;
use mcpl_core::types::*;
use serde::Serialize;
use serde_json::{Map, Value, json};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn root(version: &str) -> Value {
    let text = fs::read_to_string(fixtures().join(format!("schema/{version}.json"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Errors of validating `instance` against definition `def` of the root schema `root`.
fn errors(root: &Value, def: &str, instance: &Value) -> Vec<String> {
    assert!(root["$defs"].get(def).is_some(), "no definition {def}");
    let mut schema = root.clone();
    schema["$ref"] = json!(format!("#/$defs/{def}"));
    let validator = jsonschema::validator_for(&schema).unwrap();
    validator.iter_errors(instance).map(|e| format!("{e} at {}", e.instance_path())).collect()
}

fn assert_valid(root: &Value, version: &str, def: &str, instance: &Value) {
    let errs = errors(root, def, instance);
    assert!(
        errs.is_empty(),
        "{version} {def} rejects {}:\n{}",
        serde_json::to_string_pretty(instance).unwrap(),
        errs.join("\n")
    );
}

fn to_json(value: &impl Serialize) -> Value {
    serde_json::to_value(value).unwrap()
}

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => panic!("not an object"),
    }
}

fn complete() -> Option<ResultType> {
    Some(ResultType::Complete)
}

fn every_content_kind() -> Vec<ContentBlock> {
    let mut text = TextContent::new("hello");
    text.annotations = Some(Annotations {
        audience: Some(vec![Role::User, Role::Assistant]),
        priority: Some(0.5),
        last_modified: Some("2025-01-12T15:00:58Z".into()),
    });
    let mut link = ResourceLink::new("file:///a.txt", "a.txt");
    link.mime_type = Some("text/plain".into());
    link.size = Some(12);
    link.icons = Some(vec![Icon::new("https://example.com/i.png")]);
    let mut blob = BlobResourceContents::new("file:///b.bin", "AAEC");
    blob.mime_type = Some("application/octet-stream".into());
    vec![
        text.into(),
        ImageContent::new("iVBORw0KGgo=", "image/png").into(),
        AudioContent::new("UklGRg==", "audio/wav").into(),
        link.into(),
        EmbeddedResource::new(TextResourceContents::new("file:///a.txt", "hi")).into(),
        EmbeddedResource::new(blob).into(),
    ]
}

fn weather_tool() -> Tool {
    let mut tool = Tool::new(
        "get_weather",
        ToolSchema::object()
            .with_property("city", json!({"type": "string", "description": "City"}))
            .with_required("city"),
    );
    tool.title = Some("Weather".into());
    tool.description = Some("Current weather".into());
    tool.output_schema = Some(
        ToolSchema::object()
            .with_property("temperature", json!({"type": "number"}))
            .with_required("temperature"),
    );
    tool.annotations = Some(ToolAnnotations {
        title: Some("Weather".into()),
        read_only_hint: Some(true),
        destructive_hint: Some(false),
        idempotent_hint: Some(true),
        open_world_hint: Some(true),
    });
    tool.icons = Some(vec![Icon {
        src: "https://example.com/w.png".into(),
        mime_type: Some("image/png".into()),
        sizes: Some(vec!["48x48".into()]),
        theme: Some(IconTheme::Light),
    }]);
    tool
}

fn form_schema() -> ElicitationSchema {
    ElicitationSchema::default()
        .with_property(
            "name",
            StringSchema {
                title: Some("Name".into()),
                min_length: Some(1),
                max_length: Some(50),
                ..Default::default()
            },
        )
        .with_property(
            "email",
            StringSchema { format: Some(StringFormat::Email), ..Default::default() },
        )
        .with_property("age", {
            let mut n = NumberSchema::new(NumberType::Integer);
            n.minimum = Some(18.0);
            n.default = Some(30.0);
            n
        })
        .with_property("subscribe", BooleanSchema { default: Some(true), ..Default::default() })
        .with_property(
            "color",
            UntitledSingleSelectEnumSchema {
                values: vec!["red".into(), "green".into()],
                ..Default::default()
            },
        )
        .with_property(
            "size",
            TitledSingleSelectEnumSchema {
                one_of: vec![EnumOption::new("s", "Small"), EnumOption::new("l", "Large")],
                default: Some("s".into()),
                ..Default::default()
            },
        )
        .with_property(
            "tags",
            UntitledMultiSelectEnumSchema {
                items: UntitledEnumItems { values: vec!["a".into(), "b".into()] },
                max_items: Some(2),
                ..Default::default()
            },
        )
        .with_property(
            "toppings",
            TitledMultiSelectEnumSchema {
                items: TitledEnumItems { any_of: vec![EnumOption::new("ch", "Cheese")] },
                default: Some(vec!["ch".into()]),
                ..Default::default()
            },
        )
        .with_property(
            "legacy",
            LegacyTitledEnumSchema {
                values: vec!["x".into()],
                enum_names: Some(vec!["Ex".into()]),
                ..Default::default()
            },
        )
        .with_required("name")
}

fn task() -> Task {
    let mut t =
        Task::new("task-1", TaskStatus::Working, "2025-11-25T10:00:00Z", "2025-11-25T10:00:01Z");
    t.ttl = Some(60_000);
    t.poll_interval = Some(1_000);
    t.status_message = Some("working".into());
    t
}

fn sampling_params() -> CreateMessageRequestParams {
    let mut p = CreateMessageRequestParams::new(
        vec![
            SamplingMessage::new(
                Role::User,
                SamplingMessageContentBlock::Text(TextContent::new("Weather in Paris?")),
            ),
            SamplingMessage::new(
                Role::Assistant,
                vec![SamplingMessageContentBlock::ToolUse(ToolUseContent::new(
                    "call_1",
                    "get_weather",
                    obj(json!({"city": "Paris"})),
                ))],
            ),
            SamplingMessage::new(
                Role::User,
                vec![SamplingMessageContentBlock::ToolResult(ToolResultContent::new(
                    "call_1",
                    vec![ContentBlock::text("18C")],
                ))],
            ),
        ],
        200,
    );
    p.model_preferences = Some(ModelPreferences {
        hints: Some(vec![ModelHint { name: Some("sonnet".into()) }]),
        cost_priority: Some(0.2),
        speed_priority: Some(1.0),
        intelligence_priority: Some(0.8),
    });
    p.system_prompt = Some("Be brief.".into());
    p.include_context = Some(IncludeContext::None);
    p.temperature = Some(0.7);
    p.stop_sequences = Some(vec!["\n\n".into()]);
    p.tools = Some(vec![weather_tool()]);
    p.tool_choice = Some(ToolChoice { mode: Some(ToolChoiceMode::Auto) });
    p
}

fn messages_2025_11_25() -> Vec<(&'static str, Value)> {
    let v = ProtocolVersion::V2025_11_25.as_str();
    let client_caps = ClientCapabilities {
        roots: Some(RootsCapability { list_changed: Some(true), ..Default::default() }),
        sampling: Some(SamplingCapability { tools: Some(Map::new()), ..Default::default() }),
        elicitation: Some(ElicitationCapability {
            form: Some(Map::new()),
            url: Some(Map::new()),
            ..Default::default()
        }),
        tasks: Some(Box::new(ClientTasksCapability {
            list: Some(Map::new()),
            cancel: Some(Map::new()),
            requests: Some(ClientTaskRequests {
                sampling: Some(SamplingTaskRequests {
                    create_message: Some(Map::new()),
                    ..Default::default()
                }),
                elicitation: Some(ElicitationTaskRequests {
                    create: Some(Map::new()),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        })),
        experimental: Some(obj(json!({"x": {}}))),
        ..Default::default()
    };
    let mut client_info = Implementation::new("client", "1.0.0");
    client_info.title = Some("Client".into());
    client_info.website_url = Some("https://example.com".into());
    let server_caps = ServerCapabilities {
        logging: Some(Map::new()),
        completions: Some(Map::new()),
        prompts: Some(PromptsCapability { list_changed: Some(true), ..Default::default() }),
        resources: Some(ResourcesCapability {
            subscribe: Some(true),
            list_changed: Some(true),
            ..Default::default()
        }),
        tools: Some(ToolsCapability { list_changed: Some(false), ..Default::default() }),
        tasks: Some(ServerTasksCapability {
            list: Some(Map::new()),
            cancel: Some(Map::new()),
            requests: Some(ServerTaskRequests {
                tools: Some(ToolTaskRequests { call: Some(Map::new()), ..Default::default() }),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    let mut init_result = InitializeResult::new(v, server_caps, Implementation::new("server", "2"));
    init_result.instructions = Some("Use the tools.".into());

    let mut tool_with_task = weather_tool();
    tool_with_task.execution = Some(ToolExecution { task_support: Some(TaskSupport::Optional) });
    let tools = ListToolsResult {
        tools: vec![tool_with_task],
        next_cursor: Some("2".into()),
        ..Default::default()
    };

    let mut call_meta = Meta::new();
    call_meta.set_progress_token(&ProgressToken::from("p-1"));
    let mut call =
        CallToolRequestParams::new("get_weather").with_arguments(obj(json!({"city": "Paris"})));
    call.meta = Some(call_meta);
    call.task = Some(TaskMetadata { ttl: Some(60_000) });

    let mut call_result = CallToolResult::success(every_content_kind());
    call_result.structured_content = Some(json!({"temperature": 18}));
    call_result.is_error = Some(false);

    let mut resource = Resource::new("file:///a.txt", "a.txt");
    resource.size = Some(2);
    resource.annotations = Some(Annotations { priority: Some(1.0), ..Default::default() });
    let resources = ListResourcesResult { resources: vec![resource], ..Default::default() };
    let templates = ListResourceTemplatesResult {
        resource_templates: vec![ResourceTemplate::new("file:///{path}", "files")],
        ..Default::default()
    };
    let read = ReadResourceResult {
        contents: vec![
            TextResourceContents::new("file:///a.txt", "hi").into(),
            BlobResourceContents::new("file:///b.bin", "AAEC").into(),
        ],
        ..Default::default()
    };

    let mut prompt = Prompt::new("review");
    prompt.arguments =
        Some(vec![PromptArgument { required: Some(true), ..PromptArgument::new("code") }]);
    let prompts = ListPromptsResult { prompts: vec![prompt], ..Default::default() };
    let mut get_prompt = GetPromptRequestParams::new("review");
    get_prompt.arguments = Some(BTreeMap::from([("code".to_owned(), "x = 1".to_owned())]));
    let prompt_result = GetPromptResult {
        description: Some("Review".into()),
        messages: vec![
            PromptMessage::new(Role::User, ContentBlock::text("Review x = 1")),
            PromptMessage::new(Role::Assistant, every_content_kind().remove(4)),
        ],
        ..Default::default()
    };

    let mut complete_params = CompleteRequestParams::new(
        PromptReference::new("review"),
        CompletionArgument { name: "code".into(), value: "x".into() },
    );
    complete_params.context = Some(CompletionContext {
        arguments: Some(BTreeMap::from([("lang".to_owned(), "py".to_owned())])),
    });
    let complete_result = CompleteResult {
        completion: Completion {
            values: vec!["x = 1".into()],
            total: Some(1),
            has_more: Some(false),
        },
        ..Default::default()
    };

    let mut log = LoggingMessageNotificationParams::new(LoggingLevel::Error, json!({"e": 1}));
    log.logger = Some("db".into());

    let mut url = ElicitRequestURLParams::new("Sign in", "https://example.com/auth");
    url.elicitation_id = Some("el-1".into());
    let mut elicit_result = ElicitResult::new(ElicitAction::Accept);
    elicit_result.content = Some(BTreeMap::from([
        ("name".to_owned(), ElicitValue::String("Ada".into())),
        ("age".to_owned(), ElicitValue::Number(36.into())),
        ("subscribe".to_owned(), ElicitValue::Bool(true)),
        ("tags".to_owned(), ElicitValue::Strings(vec!["a".into()])),
    ]));

    let mut sample_result = CreateMessageResult::new(
        Role::Assistant,
        vec![SamplingMessageContentBlock::ToolUse(ToolUseContent::new(
            "call_2",
            "get_weather",
            obj(json!({"city": "Rome"})),
        ))],
        "model-1",
    );
    sample_result.stop_reason = Some("toolUse".into());

    let mut related = Meta::new();
    related.set_related_task(&RelatedTaskMetadata { task_id: "task-1".into() });

    let mut progress = ProgressNotificationParams::new(ProgressToken::Number(0), 50.0);
    progress.total = Some(100.0);
    progress.message = Some("half".into());

    let url_required =
        UrlElicitationRequiredData { elicitations: vec![url.clone()], extra: Map::new() }
            .into_error("Authorization required");

    vec![
        (
            "InitializeRequest",
            to_json(&InitializeRequest::new(
                1,
                InitializeRequestParams::new(v, client_caps, client_info),
            )),
        ),
        ("InitializeResult", to_json(&init_result)),
        ("JSONRPCResultResponse", to_json(&InitializeResultResponse::new(1, init_result))),
        ("InitializedNotification", to_json(&InitializedNotification::new(Default::default()))),
        ("PingRequest", to_json(&PingRequest::new("p", Default::default()))),
        ("EmptyResult", to_json(&EmptyResult::default())),
        ("ListToolsRequest", to_json(&ListToolsRequest::new(2, Default::default()))),
        ("ListToolsResult", to_json(&tools)),
        ("CallToolRequest", to_json(&CallToolRequest::new(3, call))),
        ("CallToolResult", to_json(&call_result)),
        ("CallToolResult", to_json(&CallToolResult::error("boom"))),
        ("ListResourcesResult", to_json(&resources)),
        ("ListResourceTemplatesResult", to_json(&templates)),
        (
            "ReadResourceRequest",
            to_json(&ReadResourceRequest::new(4, ReadResourceRequestParams::new("file:///a.txt"))),
        ),
        ("ReadResourceResult", to_json(&read)),
        (
            "SubscribeRequest",
            to_json(&SubscribeRequest::new(5, ResourceRequestParams::new("file:///a.txt"))),
        ),
        (
            "UnsubscribeRequest",
            to_json(&UnsubscribeRequest::new(6, ResourceRequestParams::new("file:///a.txt"))),
        ),
        (
            "ResourceUpdatedNotification",
            to_json(&ResourceUpdatedNotification::new(ResourceUpdatedNotificationParams::new(
                "file:///a.txt",
            ))),
        ),
        ("ListPromptsResult", to_json(&prompts)),
        ("GetPromptRequest", to_json(&GetPromptRequest::new(7, get_prompt))),
        ("GetPromptResult", to_json(&prompt_result)),
        ("CompleteRequest", to_json(&CompleteRequest::new(8, complete_params))),
        (
            "CompleteRequest",
            to_json(&CompleteRequest::new(
                9,
                CompleteRequestParams::new(
                    ResourceTemplateReference::new("file:///{path}"),
                    CompletionArgument { name: "path".into(), value: "a".into() },
                ),
            )),
        ),
        ("CompleteResult", to_json(&complete_result)),
        (
            "SetLevelRequest",
            to_json(&SetLevelRequest::new(10, SetLevelRequestParams::new(LoggingLevel::Info))),
        ),
        ("LoggingMessageNotification", to_json(&LoggingMessageNotification::new(log))),
        ("CreateMessageRequest", to_json(&CreateMessageRequest::new(11, sampling_params()))),
        ("CreateMessageResult", to_json(&sample_result)),
        (
            "ElicitRequest",
            to_json(&ElicitRequest::new(
                12,
                ElicitRequestFormParams::new("Who are you?", form_schema()).into(),
            )),
        ),
        ("ElicitRequest", to_json(&ElicitRequest::new(13, url.into()))),
        ("ElicitResult", to_json(&elicit_result)),
        (
            "ElicitationCompleteNotification",
            to_json(&ElicitationCompleteNotification::new(
                ElicitationCompleteNotificationParams::new("el-1"),
            )),
        ),
        ("ListRootsRequest", to_json(&ListRootsRequest::new(14, Default::default()))),
        (
            "ListRootsResult",
            to_json(&ListRootsResult {
                roots: vec![Root { name: Some("p".into()), ..Root::new("file:///p") }],
                ..Default::default()
            }),
        ),
        (
            "RootsListChangedNotification",
            to_json(&RootsListChangedNotification::new(Default::default())),
        ),
        ("CreateTaskResult", to_json(&CreateTaskResult::new(task()))),
        ("GetTaskRequest", to_json(&GetTaskRequest::new(15, TaskIdParams::new("task-1")))),
        ("GetTaskResult", to_json(&TaskResult::new(task()))),
        (
            "GetTaskPayloadRequest",
            to_json(&GetTaskPayloadRequest::new(16, TaskIdParams::new("task-1"))),
        ),
        (
            "GetTaskPayloadResult",
            to_json(&GetTaskPayloadResult {
                meta: Some(related),
                extra: obj(to_json(&call_result)),
            }),
        ),
        ("ListTasksRequest", to_json(&ListTasksRequest::new(17, Default::default()))),
        (
            "ListTasksResult",
            to_json(&ListTasksResult {
                tasks: vec![task(), Task::new("t2", TaskStatus::Completed, "a", "b")],
                ..Default::default()
            }),
        ),
        ("CancelTaskRequest", to_json(&CancelTaskRequest::new(18, TaskIdParams::new("task-1")))),
        ("CancelTaskResult", to_json(&TaskResult::new(task()))),
        (
            "TaskStatusNotification",
            to_json(&TaskStatusNotification::new(TaskStatusNotificationParams::new(task()))),
        ),
        (
            "CancelledNotification",
            to_json(&CancelledNotification::new(CancelledNotificationParams {
                reason: Some("user".into()),
                ..CancelledNotificationParams::new(3)
            })),
        ),
        ("ProgressNotification", to_json(&ProgressNotification::new(progress))),
        (
            "URLElicitationRequiredError",
            to_json(&ErrorResponseMessage::new(Some(19.into()), url_required)),
        ),
        (
            "JSONRPCErrorResponse",
            to_json(&ErrorResponseMessage::new(None, ErrorObject::parse_error("bad json"))),
        ),
    ]
}

fn request_meta() -> Meta {
    let caps = ClientCapabilities {
        elicitation: Some(ElicitationCapability::default()),
        extensions: Some(obj(json!({"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html"]}}))),
        ..Default::default()
    };
    let mut meta = Meta::for_request(ProtocolVersion::V2026_07_28, &caps);
    meta.set_client_info(&Implementation::new("client", "1.0.0"));
    meta.set_log_level(LoggingLevel::Warning);
    meta.set_progress_token(&ProgressToken::Number(1));
    meta
}

fn server_meta() -> Meta {
    let mut meta = Meta::new();
    meta.set_server_info(&Implementation::new("server", "2.0.0"));
    meta
}

fn paginated() -> PaginatedRequestParams {
    PaginatedRequestParams::new(Some(request_meta()), Some("c1".into()))
}

fn messages_2026_07_28() -> Vec<(&'static str, Value)> {
    let mut discover = DiscoverResult::new(
        vec!["2026-07-28".into(), "2025-11-25".into()],
        ServerCapabilities {
            tools: Some(ToolsCapability { list_changed: Some(true), ..Default::default() }),
            extensions: Some(obj(json!({"io.modelcontextprotocol/tasks": {}}))),
            ..Default::default()
        },
    );
    discover.meta = Some(server_meta());
    discover.ttl_ms = Some(3_600_000);
    discover.cache_scope = Some(CacheScope::Public);
    discover.instructions = Some("Hi".into());

    let mut tool = weather_tool();
    tool.output_schema = Some(ToolSchema {
        schema_type: Some(json!("array")),
        extra: obj(json!({"items": {"type": "string"}})),
        ..Default::default()
    });
    let tools = ListToolsResult {
        meta: Some(server_meta()),
        result_type: complete(),
        tools: vec![tool],
        next_cursor: None,
        ttl_ms: Some(0),
        cache_scope: Some(CacheScope::Private),
        extra: Map::new(),
    };

    let mut call =
        CallToolRequestParams::new("get_weather").with_arguments(obj(json!({"city": "Paris"})));
    call.meta = Some(request_meta());
    call.request_state = Some("state-1".into());
    call.input_responses = Some(BTreeMap::from([
        ("login".to_owned(), InputResponse::Elicit(ElicitResult::new(ElicitAction::Decline))),
        (
            "roots".to_owned(),
            InputResponse::ListRoots(ListRootsResult {
                roots: vec![Root::new("file:///p")],
                ..Default::default()
            }),
        ),
        (
            "sample".to_owned(),
            InputResponse::CreateMessage(CreateMessageResult::new(
                Role::Assistant,
                SamplingMessageContentBlock::Text(TextContent::new("Paris")),
                "m",
            )),
        ),
    ]));

    let input_required = InputRequiredResult {
        meta: Some(server_meta()),
        input_requests: Some(BTreeMap::from([
            (
                "login".to_owned(),
                InputRequest::Elicit(ElicitInputRequest::new(
                    ElicitRequestFormParams::new("Who?", form_schema()).into(),
                )),
            ),
            (
                "key".to_owned(),
                InputRequest::Elicit(ElicitInputRequest::new(
                    ElicitRequestURLParams::new("Set key", "https://example.com/key").into(),
                )),
            ),
            (
                "sample".to_owned(),
                InputRequest::CreateMessage(SamplingInputRequest::new(sampling_params())),
            ),
            (
                "roots".to_owned(),
                InputRequest::ListRoots(ListRootsInputRequest::new(Default::default())),
            ),
        ])),
        request_state: Some("state-1".into()),
        ..Default::default()
    };

    let call_result = CallToolResult {
        result_type: complete(),
        structured_content: Some(json!(["a", "b"])),
        ..CallToolResult::success(every_content_kind())
    };

    let resources = ListResourcesResult {
        result_type: complete(),
        resources: vec![Resource::new("file:///a.txt", "a")],
        ttl_ms: Some(1000),
        cache_scope: Some(CacheScope::Public),
        ..Default::default()
    };
    let templates = ListResourceTemplatesResult {
        result_type: complete(),
        resource_templates: vec![ResourceTemplate::new("file:///{p}", "files")],
        ttl_ms: Some(1000),
        cache_scope: Some(CacheScope::Public),
        ..Default::default()
    };
    let mut read_params = ReadResourceRequestParams::new("file:///a.txt");
    read_params.meta = Some(request_meta());
    let read = ReadResourceResult {
        result_type: complete(),
        contents: vec![TextResourceContents::new("file:///a.txt", "hi").into()],
        ttl_ms: Some(10),
        cache_scope: Some(CacheScope::Private),
        ..Default::default()
    };
    let prompts = ListPromptsResult {
        result_type: complete(),
        prompts: vec![Prompt::new("review")],
        ttl_ms: Some(1),
        cache_scope: Some(CacheScope::Public),
        ..Default::default()
    };
    let mut get_prompt = GetPromptRequestParams::new("review");
    get_prompt.meta = Some(request_meta());
    let prompt_result = GetPromptResult {
        result_type: complete(),
        messages: vec![PromptMessage::new(Role::User, ContentBlock::text("hi"))],
        ..Default::default()
    };
    let mut complete_params = CompleteRequestParams::new(
        PromptReference::new("review"),
        CompletionArgument { name: "code".into(), value: "x".into() },
    );
    complete_params.meta = Some(request_meta());

    let filter = SubscriptionFilter {
        tools_list_changed: Some(true),
        resource_subscriptions: Some(vec!["file:///a.txt".into()]),
        ..Default::default()
    };
    let mut sub_meta = Meta::new();
    sub_meta.set_subscription_id(&"listen-1".into());
    let listen_result = SubscriptionsListenResult {
        meta: Some(sub_meta.clone()),
        result_type: complete(),
        ..Default::default()
    };

    let mut log = LoggingMessageNotificationParams::new(LoggingLevel::Info, json!("started"));
    log.meta = Some(sub_meta.clone());

    vec![
        (
            "DiscoverRequest",
            to_json(&DiscoverRequest::new("d-1", RequestParams::with_meta(request_meta()))),
        ),
        ("DiscoverResultResponse", to_json(&DiscoverResultResponse::new("d-1", discover))),
        ("ListToolsRequest", to_json(&ListToolsRequest::new(1, paginated()))),
        ("ListToolsResultResponse", to_json(&ListToolsResultResponse::new(1, tools))),
        ("CallToolRequest", to_json(&CallToolRequest::new(2, call))),
        ("InputRequiredResult", to_json(&input_required)),
        (
            "CallToolResultResponse",
            to_json(&CallToolResultResponse::new(2, Outcome::InputRequired(input_required))),
        ),
        (
            "CallToolResultResponse",
            to_json(&CallToolResultResponse::new(3, Outcome::Complete(call_result))),
        ),
        ("ListResourcesRequest", to_json(&ListResourcesRequest::new(4, paginated()))),
        ("ListResourcesResultResponse", to_json(&ListResourcesResultResponse::new(4, resources))),
        (
            "ListResourceTemplatesRequest",
            to_json(&ListResourceTemplatesRequest::new(5, paginated())),
        ),
        (
            "ListResourceTemplatesResultResponse",
            to_json(&ListResourceTemplatesResultResponse::new(5, templates)),
        ),
        ("ReadResourceRequest", to_json(&ReadResourceRequest::new(6, read_params))),
        ("ReadResourceResultResponse", to_json(&ReadResourceResultResponse::new(6, read.into()))),
        ("ListPromptsRequest", to_json(&ListPromptsRequest::new(7, paginated()))),
        ("ListPromptsResultResponse", to_json(&ListPromptsResultResponse::new(7, prompts))),
        ("GetPromptRequest", to_json(&GetPromptRequest::new(8, get_prompt))),
        (
            "GetPromptResultResponse",
            to_json(&GetPromptResultResponse::new(8, prompt_result.into())),
        ),
        ("CompleteRequest", to_json(&CompleteRequest::new(9, complete_params))),
        (
            "CompleteResultResponse",
            to_json(&CompleteResultResponse::new(
                9,
                CompleteResult {
                    result_type: complete(),
                    completion: Completion { values: vec!["a".into()], ..Default::default() },
                    ..Default::default()
                },
            )),
        ),
        (
            "SubscriptionsListenRequest",
            to_json(&SubscriptionsListenRequest::new(
                "listen-1",
                SubscriptionsListenRequestParams {
                    meta: Some(request_meta()),
                    notifications: filter.clone(),
                    extra: Map::new(),
                },
            )),
        ),
        (
            "SubscriptionsAcknowledgedNotification",
            to_json(&SubscriptionsAcknowledgedNotification::new(
                SubscriptionsAcknowledgedNotificationParams {
                    meta: Some(sub_meta.clone()),
                    notifications: filter,
                    extra: Map::new(),
                },
            )),
        ),
        (
            "SubscriptionsListenResultResponse",
            to_json(&SubscriptionsListenResultResponse::new("listen-1", listen_result)),
        ),
        (
            "ToolListChangedNotification",
            to_json(&ToolListChangedNotification::new(NotificationParams {
                meta: Some(sub_meta),
                ..Default::default()
            })),
        ),
        ("LoggingMessageNotification", to_json(&LoggingMessageNotification::new(log))),
        (
            "CancelledNotification",
            to_json(&CancelledNotification::new(CancelledNotificationParams::new("r-1"))),
        ),
        (
            "ProgressNotification",
            to_json(&ProgressNotification::new(ProgressNotificationParams::new("p", 0.25))),
        ),
        (
            "UnsupportedProtocolVersionError",
            to_json(&ErrorResponseMessage::new(
                Some(1.into()),
                UnsupportedProtocolVersionData {
                    requested: "1999-01-01".into(),
                    supported: vec!["2026-07-28".into()],
                }
                .into_error("Unsupported protocol version"),
            )),
        ),
        (
            "MissingRequiredClientCapabilityError",
            to_json(&ErrorResponseMessage::new(
                Some(1.into()),
                MissingRequiredClientCapabilityData {
                    required_capabilities: ClientCapabilities {
                        sampling: Some(SamplingCapability::default()),
                        ..Default::default()
                    },
                }
                .into_error("Sampling required"),
            )),
        ),
        (
            "HeaderMismatchError",
            to_json(&ErrorResponseMessage::new(
                Some(1.into()),
                header_mismatch("Mcp-Name differs"),
            )),
        ),
    ]
}

#[test]
fn messages_validate_against_2025_11_25() {
    let root = root("2025-11-25");
    let messages = messages_2025_11_25();
    for (def, value) in &messages {
        assert_valid(&root, "2025-11-25", def, value);
    }
    assert!(messages.len() >= 45, "{}", messages.len());
    eprintln!("2025-11-25: {} messages validated", messages.len());
}

#[test]
fn messages_validate_against_2026_07_28() {
    let root = root("2026-07-28");
    let messages = messages_2026_07_28();
    for (def, value) in &messages {
        assert_valid(&root, "2026-07-28", def, value);
    }
    assert!(messages.len() >= 30, "{}", messages.len());
    eprintln!("2026-07-28: {} messages validated", messages.len());
}

#[test]
fn harness_rejects_invalid_messages() {
    let root = root("2026-07-28");
    // A 2026 result must carry resultType and, when cacheable, the cache hints.
    let bare = to_json(&ListToolsResult::default());
    assert!(!errors(&root, "ListToolsResult", &bare).is_empty());
    // A 2026 request must carry the required `_meta` keys.
    let no_meta = to_json(&ListToolsRequest::new(1, Default::default()));
    assert!(!errors(&root, "ListToolsRequest", &no_meta).is_empty());
    // 2025-11-25 requires an elicitation id on URL-mode elicitations.
    let root = self::root("2025-11-25");
    let url = ElicitRequest::new(1, ElicitRequestURLParams::new("m", "https://x.example").into());
    assert!(!errors(&root, "ElicitRequest", &to_json(&url)).is_empty());
}

#[test]
fn every_2026_example_validates_against_its_definition() {
    let root = root("2026-07-28");
    let dir = fixtures().join("2026-07-28/examples");
    let mut count = 0;
    for folder in fs::read_dir(&dir).unwrap() {
        let folder = folder.unwrap().path();
        let def = folder.file_name().unwrap().to_str().unwrap().to_owned();
        for file in fs::read_dir(&folder).unwrap() {
            let file = file.unwrap().path();
            let value: Value = serde_json::from_str(&fs::read_to_string(&file).unwrap()).unwrap();
            assert_valid(&root, "2026-07-28", &def, &value);
            count += 1;
        }
    }
    assert_eq!(count, 129);
}
