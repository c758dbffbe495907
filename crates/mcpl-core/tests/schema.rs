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
    text.annotations = Some(
        Annotations::default()
            .with_audience(vec![Role::User, Role::Assistant])
            .with_priority(0.5)
            .with_last_modified("2025-01-12T15:00:58Z"),
    );
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
    tool.annotations = Some(
        ToolAnnotations::default()
            .with_title("Weather")
            .with_read_only_hint(true)
            .with_destructive_hint(false)
            .with_idempotent_hint(true)
            .with_open_world_hint(true),
    );
    tool.icons = Some(vec![
        Icon::new("https://example.com/w.png")
            .with_mime_type("image/png")
            .with_sizes(vec!["48x48".into()])
            .with_theme(IconTheme::Light),
    ]);
    tool
}

fn form_schema() -> ElicitationSchema {
    ElicitationSchema::default()
        .with_property(
            "name",
            StringSchema::default().with_title("Name").with_min_length(1u64).with_max_length(50u64),
        )
        .with_property("email", StringSchema::default().with_format(StringFormat::Email))
        .with_property("age", {
            let mut n = NumberSchema::new(NumberType::Integer);
            n.minimum = Some(18.0);
            n.default = Some(30.0);
            n
        })
        .with_property("subscribe", BooleanSchema::default().with_default(true))
        .with_property(
            "color",
            UntitledSingleSelectEnumSchema::default()
                .with_values(vec!["red".into(), "green".into()]),
        )
        .with_property(
            "size",
            TitledSingleSelectEnumSchema::default()
                .with_one_of(vec![EnumOption::new("s", "Small"), EnumOption::new("l", "Large")])
                .with_default("s"),
        )
        .with_property(
            "tags",
            UntitledMultiSelectEnumSchema::default()
                .with_items(UntitledEnumItems::default().with_values(vec!["a".into(), "b".into()]))
                .with_max_items(2u64),
        )
        .with_property(
            "toppings",
            TitledMultiSelectEnumSchema::default()
                .with_items(
                    TitledEnumItems::default().with_any_of(vec![EnumOption::new("ch", "Cheese")]),
                )
                .with_default(vec!["ch".into()]),
        )
        .with_property(
            "legacy",
            LegacyTitledEnumSchema::default()
                .with_values(vec!["x".into()])
                .with_enum_names(vec!["Ex".into()]),
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
    p.model_preferences = Some(
        ModelPreferences::default()
            .with_hints(vec![ModelHint::default().with_name("sonnet")])
            .with_cost_priority(0.2)
            .with_speed_priority(1.0)
            .with_intelligence_priority(0.8),
    );
    p.system_prompt = Some("Be brief.".into());
    p.include_context = Some(IncludeContext::None);
    p.temperature = Some(0.7);
    p.stop_sequences = Some(vec!["\n\n".into()]);
    p.tools = Some(vec![weather_tool()]);
    p.tool_choice = Some(ToolChoice::default().with_mode(ToolChoiceMode::Auto));
    p
}

fn messages_2025_11_25() -> Vec<(&'static str, Value)> {
    let v = ProtocolVersion::V2025_11_25.as_str();
    let client_caps = ClientCapabilities::default()
        .with_roots(RootsCapability::default().with_list_changed(true))
        .with_sampling(SamplingCapability::default().with_tools(Map::new()))
        .with_elicitation(
            ElicitationCapability::default().with_form(Map::new()).with_url(Map::new()),
        )
        .with_tasks(Box::new(
            ClientTasksCapability::default()
                .with_list(Map::new())
                .with_cancel(Map::new())
                .with_requests(
                    ClientTaskRequests::default()
                        .with_sampling(
                            SamplingTaskRequests::default().with_create_message(Map::new()),
                        )
                        .with_elicitation(
                            ElicitationTaskRequests::default().with_create(Map::new()),
                        ),
                ),
        ))
        .with_experimental(obj(json!({"x": {}})));
    let mut client_info = Implementation::new("client", "1.0.0");
    client_info.title = Some("Client".into());
    client_info.website_url = Some("https://example.com".into());
    let server_caps = ServerCapabilities::default()
        .with_logging(Map::new())
        .with_completions(Map::new())
        .with_prompts(PromptsCapability::default().with_list_changed(true))
        .with_resources(ResourcesCapability::default().with_subscribe(true).with_list_changed(true))
        .with_tools(ToolsCapability::default().with_list_changed(false))
        .with_tasks(
            ServerTasksCapability::default()
                .with_list(Map::new())
                .with_cancel(Map::new())
                .with_requests(
                    ServerTaskRequests::default()
                        .with_tools(ToolTaskRequests::default().with_call(Map::new())),
                ),
        );
    let mut init_result = InitializeResult::new(v, server_caps, Implementation::new("server", "2"));
    init_result.instructions = Some("Use the tools.".into());

    let mut tool_with_task = weather_tool();
    tool_with_task.execution =
        Some(ToolExecution::default().with_task_support(TaskSupport::Optional));
    let tools = ListToolsResult::default().with_tools(vec![tool_with_task]).with_next_cursor("2");

    let mut call_meta = Meta::new();
    call_meta.set_progress_token(&ProgressToken::from("p-1"));
    let mut call =
        CallToolRequestParams::new("get_weather").with_arguments(obj(json!({"city": "Paris"})));
    call.meta = Some(call_meta);
    call.task = Some(TaskMetadata::default().with_ttl(60_000u64));

    let mut call_result = CallToolResult::success(every_content_kind());
    call_result.structured_content = Some(json!({"temperature": 18}));
    call_result.is_error = Some(false);

    let mut resource = Resource::new("file:///a.txt", "a.txt");
    resource.size = Some(2);
    resource.annotations = Some(Annotations::default().with_priority(1.0));
    let resources = ListResourcesResult::default().with_resources(vec![resource]);
    let templates = ListResourceTemplatesResult::default()
        .with_resource_templates(vec![ResourceTemplate::new("file:///{path}", "files")]);
    let read = ReadResourceResult::default().with_contents(vec![
        TextResourceContents::new("file:///a.txt", "hi").into(),
        BlobResourceContents::new("file:///b.bin", "AAEC").into(),
    ]);

    let mut prompt = Prompt::new("review");
    prompt.arguments = Some(vec![PromptArgument::new("code").with_required(true)]);
    let prompts = ListPromptsResult::default().with_prompts(vec![prompt]);
    let mut get_prompt = GetPromptRequestParams::new("review");
    get_prompt.arguments = Some(BTreeMap::from([("code".to_owned(), "x = 1".to_owned())]));
    let prompt_result = GetPromptResult::default().with_description("Review").with_messages(vec![
        PromptMessage::new(Role::User, ContentBlock::text("Review x = 1")),
        PromptMessage::new(Role::Assistant, every_content_kind().remove(4)),
    ]);

    let mut complete_params = CompleteRequestParams::new(
        PromptReference::new("review"),
        CompletionArgument::new("code", "x"),
    );
    complete_params.context = Some(
        CompletionContext::default()
            .with_arguments(BTreeMap::from([("lang".to_owned(), "py".to_owned())])),
    );
    let complete_result = CompleteResult::default().with_completion(
        Completion::default()
            .with_values(vec!["x = 1".into()])
            .with_total(1u64)
            .with_has_more(false),
    );

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
    related.set_related_task(&RelatedTaskMetadata::new("task-1"));

    let mut progress = ProgressNotificationParams::new(ProgressToken::Number(0), 50.0);
    progress.total = Some(100.0);
    progress.message = Some("half".into());

    let url_required =
        UrlElicitationRequiredData::new(vec![url.clone()]).into_error("Authorization required");

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
                    CompletionArgument::new("path", "a"),
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
            to_json(
                &ListRootsResult::default().with_roots(vec![Root::new("file:///p").with_name("p")]),
            ),
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
            to_json(
                &GetTaskPayloadResult::default()
                    .with_meta(related)
                    .with_extra(obj(to_json(&call_result))),
            ),
        ),
        ("ListTasksRequest", to_json(&ListTasksRequest::new(17, Default::default()))),
        (
            "ListTasksResult",
            to_json(
                &ListTasksResult::default()
                    .with_tasks(vec![task(), Task::new("t2", TaskStatus::Completed, "a", "b")]),
            ),
        ),
        ("CancelTaskRequest", to_json(&CancelTaskRequest::new(18, TaskIdParams::new("task-1")))),
        ("CancelTaskResult", to_json(&TaskResult::new(task()))),
        (
            "TaskStatusNotification",
            to_json(&TaskStatusNotification::new(TaskStatusNotificationParams::new(task()))),
        ),
        (
            "CancelledNotification",
            to_json(&CancelledNotification::new(
                CancelledNotificationParams::new(3).with_reason("user"),
            )),
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
    let caps = ClientCapabilities::default()
        .with_elicitation(ElicitationCapability::default())
        .with_extensions(obj(json!({"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html"]}})));
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
        ServerCapabilities::default()
            .with_tools(ToolsCapability::default().with_list_changed(true))
            .with_extensions(obj(json!({"io.modelcontextprotocol/tasks": {}}))),
    );
    discover.meta = Some(server_meta());
    discover.ttl_ms = Some(3_600_000);
    discover.cache_scope = Some(CacheScope::Public);
    discover.instructions = Some("Hi".into());

    let mut tool = weather_tool();
    tool.output_schema = Some(
        ToolSchema::default()
            .with_schema_type(json!("array"))
            .with_extra(obj(json!({"items": {"type": "string"}}))),
    );
    let tools = {
        let mut result = ListToolsResult::default()
            .with_meta(server_meta())
            .with_tools(vec![tool])
            .with_ttl_ms(0u64)
            .with_cache_scope(CacheScope::Private);
        result.result_type = complete();
        result
    };

    let mut call =
        CallToolRequestParams::new("get_weather").with_arguments(obj(json!({"city": "Paris"})));
    call.meta = Some(request_meta());
    call.request_state = Some("state-1".into());
    call.input_responses = Some(BTreeMap::from([
        ("login".to_owned(), InputResponse::Elicit(ElicitResult::new(ElicitAction::Decline))),
        (
            "roots".to_owned(),
            InputResponse::ListRoots(
                ListRootsResult::default().with_roots(vec![Root::new("file:///p")]),
            ),
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

    let input_required = InputRequiredResult::default()
        .with_meta(server_meta())
        .with_input_requests(BTreeMap::from([
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
        ]))
        .with_request_state("state-1");

    let call_result = {
        let mut success = CallToolResult::success(every_content_kind())
            .with_structured_content(json!(["a", "b"]));
        success.result_type = complete();
        success
    };

    let resources = {
        let mut result = ListResourcesResult::default()
            .with_resources(vec![Resource::new("file:///a.txt", "a")])
            .with_ttl_ms(1000u64)
            .with_cache_scope(CacheScope::Public);
        result.result_type = complete();
        result
    };
    let templates = {
        let mut result = ListResourceTemplatesResult::default()
            .with_resource_templates(vec![ResourceTemplate::new("file:///{p}", "files")])
            .with_ttl_ms(1000u64)
            .with_cache_scope(CacheScope::Public);
        result.result_type = complete();
        result
    };
    let mut read_params = ReadResourceRequestParams::new("file:///a.txt");
    read_params.meta = Some(request_meta());
    let read = {
        let mut result = ReadResourceResult::default()
            .with_contents(vec![TextResourceContents::new("file:///a.txt", "hi").into()])
            .with_ttl_ms(10u64)
            .with_cache_scope(CacheScope::Private);
        result.result_type = complete();
        result
    };
    let prompts = {
        let mut result = ListPromptsResult::default()
            .with_prompts(vec![Prompt::new("review")])
            .with_ttl_ms(1u64)
            .with_cache_scope(CacheScope::Public);
        result.result_type = complete();
        result
    };
    let mut get_prompt = GetPromptRequestParams::new("review");
    get_prompt.meta = Some(request_meta());
    let prompt_result = {
        let mut result = GetPromptResult::default()
            .with_messages(vec![PromptMessage::new(Role::User, ContentBlock::text("hi"))]);
        result.result_type = complete();
        result
    };
    let mut complete_params = CompleteRequestParams::new(
        PromptReference::new("review"),
        CompletionArgument::new("code", "x"),
    );
    complete_params.meta = Some(request_meta());

    let filter = SubscriptionFilter::default()
        .with_tools_list_changed(true)
        .with_resource_subscriptions(vec!["file:///a.txt".into()]);
    let mut sub_meta = Meta::new();
    sub_meta.set_subscription_id(&"listen-1".into());
    let listen_result = {
        let mut result = SubscriptionsListenResult::default().with_meta(sub_meta.clone());
        result.result_type = complete();
        result
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
            to_json(&CompleteResultResponse::new(9, {
                let mut result = CompleteResult::default()
                    .with_completion(Completion::default().with_values(vec!["a".into()]));
                result.result_type = complete();
                result
            })),
        ),
        (
            "SubscriptionsListenRequest",
            to_json(&SubscriptionsListenRequest::new(
                "listen-1",
                SubscriptionsListenRequestParams::default()
                    .with_meta(request_meta())
                    .with_notifications(filter.clone()),
            )),
        ),
        (
            "SubscriptionsAcknowledgedNotification",
            to_json(&SubscriptionsAcknowledgedNotification::new(
                SubscriptionsAcknowledgedNotificationParams::default()
                    .with_meta(sub_meta.clone())
                    .with_notifications(filter),
            )),
        ),
        (
            "SubscriptionsListenResultResponse",
            to_json(&SubscriptionsListenResultResponse::new("listen-1", listen_result)),
        ),
        (
            "ToolListChangedNotification",
            to_json(&ToolListChangedNotification::new(
                NotificationParams::default().with_meta(sub_meta),
            )),
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
                UnsupportedProtocolVersionData::new("1999-01-01", vec!["2026-07-28".into()])
                    .into_error("Unsupported protocol version"),
            )),
        ),
        (
            "MissingRequiredClientCapabilityError",
            to_json(&ErrorResponseMessage::new(
                Some(1.into()),
                MissingRequiredClientCapabilityData::new(
                    ClientCapabilities::default().with_sampling(SamplingCapability::default()),
                )
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
